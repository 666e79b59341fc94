"""A T5-style model trained in fp16 whose feed-forward `wo` overflows: the script knows nothing of mpdoctor.

mpdoctor numerics docs/numerics_examples/t5_overflow.py --steps 3
"""

import sys

import torch
from torch import nn


class DenseReluDense(nn.Module):
    def __init__(self, d: int = 32, f: int = 128) -> None:
        super().__init__()
        self.wi = nn.Linear(d, f, bias=False)
        self.wo = nn.Linear(f, d, bias=False)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.wo(self.dropout(torch.relu(self.wi(x)))))


class T5LayerFF(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.layer_norm = nn.LayerNorm(d)
        self.DenseReluDense = DenseReluDense(d)

    def forward(self, x):
        return x + self.DenseReluDense(self.layer_norm(x))


class Encoder(nn.Module):
    def __init__(self, vocab: int = 100, d: int = 32, depth: int = 4) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.block = nn.ModuleList([T5LayerFF(d) for _ in range(depth)])
        self.lm_head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.block:
            x = layer(x)
        return self.lm_head(x)


steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 10
torch.manual_seed(0)
model = Encoder()
with torch.no_grad():  # what pre-training in bf16 left behind: wo's weights far larger than the rest
    model.block[2].DenseReluDense.wo.weight.mul_(2e5)
model = model.half()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
for step in range(steps):
    tokens = torch.randint(0, 100, (4, 16))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens).float().flatten(0, 1), tokens.flatten())
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4g}")
