"""The Python API examples of docs/numerics.md, printed by the real code: `python api.py NAME`.

NAME is attention (scores overflowing inside an attention block, fp16), scaler (GradScaler's own
overflow steps, autocast fp16), compare (bf16 drift of a hand-written LayerNorm against fp32) or verify
(the step re-run with the fix applied: the attention block's, and a norm whose fix moves the overflow on).
"""

import sys

import torch
from torch import nn

import mpdoctor


class Attention(nn.Module):
    """q @ k^T without the 1/sqrt(d) scale: in fp16 the scores overflow inside the block."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        scores = split(self.q_proj(x)) @ split(self.k_proj(x)).transpose(-1, -2)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return self.o_proj((torch.softmax(scores, -1) @ split(self.v_proj(x))).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.input_layernorm = nn.LayerNorm(d)
        self.self_attn = Attention(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(x)


class HandLayerNorm(nn.Module):
    """E[x^2] - E[x]^2 in the input's dtype."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = (x * x).mean(-1, keepdim=True) - mean * mean
        return (x - mean) * torch.rsqrt(variance + 1e-5) * self.weight + self.bias


class AudioEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Linear(16, 32)
        self.layer_norm = HandLayerNorm(32)
        self.fc = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc(self.layer_norm(self.conv(x) + 4.0))  # features with a large mean


class RMSNorm(nn.Module):
    """T5's norm written by hand, its variance in the input's dtype: x.pow(2) overflows fp16, the output is zeros."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class FeedForward(nn.Module):
    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.layer_norm = RMSNorm(d)
        self.wi, self.wo = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        return x + self.wo(torch.relu(self.wi(self.layer_norm(x))))


def attention_model():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).half()
    with torch.no_grad():
        for proj in (model[1].self_attn.q_proj, model[1].self_attn.k_proj):
            proj.weight.mul_(300)
    x = torch.randn(2, 16, 64, dtype=torch.half) * 4
    return model, lambda: model(x).float().pow(2).sum().backward()


def attention() -> None:
    model, step = attention_model()
    with mpdoctor.numerics_watch(model) as watch:
        step()
    print(watch)


def verify() -> None:
    model, step = attention_model()
    with mpdoctor.numerics_watch(model) as watch:
        step()
    print(watch.verify(step).text)  # the step run again, unchanged and with the fix; the model is left as it was
    torch.manual_seed(0)
    model = FeedForward()
    with torch.no_grad():
        model.wo.weight.mul_(1e5)  # t5-large's wo: activations past fp16's max, once the norm lets them through
    model = model.half()
    x = torch.randn(2, 8, 16, dtype=torch.half) * 300

    def train_step():
        model(x).float().sum().backward()

    with mpdoctor.numerics_watch(model) as watch:
        train_step()
    watch.verify(train_step)
    print(watch)


def scaler() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 32))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40, backoff_factor=2.0**-8)
    x = torch.randn(16, 32)
    with mpdoctor.numerics_watch(model) as watch:
        for _ in range(8):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).float().pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    print(watch)
    print([(s.step, s.scale, s.found_inf) for s in watch.scaler][:4])


def compare() -> None:
    torch.manual_seed(0)
    model = AudioEncoder()
    x = torch.randn(4, 10, 16, generator=torch.Generator().manual_seed(1))
    report = mpdoctor.numerics_compare(model, x, dtype=torch.bfloat16, loss=lambda out: out.pow(2).sum())
    print(report)


if __name__ == "__main__":
    {"attention": attention, "scaler": scaler, "compare": compare, "verify": verify}[sys.argv[1]]()
