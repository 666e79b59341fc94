"""ONNX models converted to fp16 (onnxconverter-common, onnxmltools, onnxruntime.transformers) that ONNX Runtime
refuses to load: ORT's graph type checks in its own words.

``convert_float_to_float16`` rewrites initializers, inputs and most nodes to float16, inserting Casts around the
ops in ``op_block_list``; where it misses one (a Cast node whose ``to`` still says float, a RandomNormalLike, an
initializer shared by a blocked and an unblocked node) the graph names two float types for one tensor and ORT
stops at load (``InferenceSession(...)``), before any inference.
"""

from __future__ import annotations

from mpdoctor.explain.known._dtype_words import DTYPE_TRACE
from mpdoctor.explain.signature import Signature, fix

_SOURCE_CONVERTER = "https://github.com/microsoft/onnxconverter-common/blob/master/onnxconverter_common/float16.py"
_SOURCE_ORT_FLOAT16 = (
    "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/python/tools/transformers/float16.py"
)
_SOURCE_ORT_GRAPH = "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/core/graph/graph.cc"

_F16 = r"b?float16"  # ONNX's names: tensor(float16), tensor(bfloat16); tensor(float) is fp32, tensor(double) fp64
_F32 = r"(?:float|double)"

_CONVERT_AGAIN = fix(
    "Convert again from the fp32 model, keeping the graph's inputs/outputs in fp32 and the node ORT names "
    "(and its op type) in fp32; the converter then inserts the Casts around it: "
    "`from onnxconverter_common import float16; m16 = float16.convert_float_to_float16(model, "
    "keep_io_types=True, op_block_list=float16.DEFAULT_OP_BLOCK_LIST + ['{op}'], node_block_list=['{node}'])`"
)

SIGNATURES: list[Signature] = [
    Signature(
        id="onnx-fp16-graph-type-mismatch",
        family="dtype",
        title="ONNX Runtime refused an fp16-converted graph: one tensor is both float16 and float32 ({node})",
        needles=(
            "does not match expected type (tensor(",
            "bound to different types (tensor(",
            "usage of initializer in graph expects tensor(",
        ),
        patterns=(
            r"type \(tensor\("
            + _F16
            + r"\)\) of output arg [^\n]{0,200}?does not match expected type \(tensor\("
            + _F32
            + r"\)\)",
            r"type \(tensor\("
            + _F32
            + r"\)\) of output arg [^\n]{0,200}?does not match expected type \(tensor\("
            + _F16
            + r"\)\)",
            r"bound to different types \(tensor\(" + _F16 + r"\) and tensor\(" + _F32 + r"\)",
            r"bound to different types \(tensor\(" + _F32 + r"\) and tensor\(" + _F16 + r"\)",
            r"has element type tensor\(" + _F16 + r"\) but usage of initializer in graph expects tensor\(" + _F32,
            r"has element type tensor\(" + _F32 + r"\) but usage of initializer in graph expects tensor\(" + _F16,
        ),
        details=(
            r"tensor\(",
            r"of node \((?P<node>[^()\n]{1,200})\)",
            r"in node \((?P<node>[^()\n]{1,200})\)",
            r"optype \((?P<op>[A-Za-z0-9_]{1,60})\)",
            r"initializer '(?P<node>[^'\n]{1,200})'",
        ),
        defaults=(("node", "<the node ORT names>"), ("op", "<that node's op type>")),
        cause="An ONNX model converted to float16 (onnxconverter-common/onnxmltools `convert_float_to_float16`, "
        "`onnxruntime.transformers` `--float16`, or a `.half()` torch model exported with casts) has a tensor "
        "whose producer and consumer disagree on its type: a Cast node still casting to float while its output "
        "was relabelled float16, an op the converter kept in fp32 (`op_block_list`) fed a float16 constant "
        "without a Cast, or a node ORT only runs in float (RandomNormalLike on the CPU). ONNX Runtime checks "
        "every node's type constraints when the session is created and refuses the graph.",
        fixes=(
            _CONVERT_AGAIN,
            fix(
                "Or let the converter pick the ops to keep in fp32 by checking the outputs against the fp32 "
                "model: `from onnxconverter_common import auto_mixed_precision; m16 = auto_mixed_precision."
                "auto_convert_mixed_precision(model, feed_dict, rtol=0.01, atol=0.001, keep_io_types=True)`"
            ),
            fix(
                "Open the converted model in Netron at {node}: a Cast whose `to` attribute is 1 (float) with a "
                "float16 output is the converter's miss; set it to 10 (float16), or export the torch model in "
                "fp32 and convert with the tool above instead of exporting a `.half()` model"
            ),
            DTYPE_TRACE,
        ),
        checks=(),
        sources=(
            "https://github.com/microsoft/onnxruntime/issues/15241",
            "https://github.com/microsoft/onnxconverter-common/issues/320",
            "https://github.com/microsoft/onnxconverter-common/issues/304",
            _SOURCE_CONVERTER,
            _SOURCE_ORT_FLOAT16,
            _SOURCE_ORT_GRAPH,
        ),
        examples=(
            "[ONNXRuntimeError] : 1 : FAIL : Type Error: Type parameter (T) of Optype (Add) bound to different "
            "types (tensor(float16) and tensor(float) in node ()",
            "Load model failed:Type Error: Type (tensor(float16)) of output arg (_to_copy) of node "
            "(node__to_copy) does not match expected type (tensor(float)).",
            "Float mismatch error after float16 quantization ：Data in initializer 'onnx::Add_2877' has element "
            "type tensor(float16) but usage of initializer in graph expects tensor(float)",
        ),
        near_misses=(
            "Type Error: Type parameter (T) of Optype (Add) bound to different types (tensor(int64) and "
            "tensor(int32) in node (node_add_39).",
            "FAIL : Load model from embeddings2.onnx failed:Type Error: Type parameter (Tind) of Optype (Slice) "
            "bound to different types (tensor(int64) and tensor(int32) in node (/Slice)",
        ),
        notes="Only claimed when one side is float16/bfloat16 and the other float/double: integer mix-ups "
        "(the near-misses, from users' notes on ORT) are not precision failures.",
    ),
    Signature(
        id="onnx-fp16-input-type-invalid",
        family="op-support",
        title="ONNX Runtime refused an fp16-converted graph: {op} does not take a float16 input there",
        needles=("of input parameter (",),
        patterns=(r"type 'tensor\(" + _F16 + r"\)' of input parameter \([^)\n]{0,200}\) of operator \(",),
        details=(
            r"of operator \((?P<op>[A-Za-z0-9_]{1,60})\)",
            r"in node \((?P<node>[^()\n]{1,200})\)",
        ),
        defaults=(("node", "<the node ORT names>"),),
        cause="The fp16 converter turned an input of {op} into float16 where the op's schema allows only float "
        "(Resize's `scales`, the roi/sizes inputs of some ops, the second input of a few others). The ONNX "
        "schema, not the hardware, refuses it: the model is invalid until that input is float again.",
        fixes=(
            fix(
                "Convert again keeping {op} in fp32 (the converter then casts around it): "
                "`float16.convert_float_to_float16(model, keep_io_types=True, "
                "op_block_list=float16.DEFAULT_OP_BLOCK_LIST + ['{op}'])` (onnxconverter-common's default block "
                "list already has Resize; older winmltools/onnxmltools converters did not)"
            ),
            fix("Or keep only the node ORT names in fp32: `node_block_list=['{node}']`"),
        ),
        checks=(),
        sources=(
            "https://github.com/microsoft/onnxruntime/issues/8327",
            _SOURCE_CONVERTER,
            "https://github.com/onnx/onnx/blob/main/docs/Operators.md#Resize",
        ),
        examples=(
            "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : "
            "Load model from model_fp16.onnx failed:This is an invalid model. Type Error: Type 'tensor(float16)' "
            "of input parameter (1105) of operator (Resize) in node (Resize_288) is invalid.",
            "Type Error: Type 'tensor(bfloat16)' of input parameter (hidden_states) of operator (Cast) in node "
            "(/blocks.0/norm1/Cast) is invalid.",
        ),
    ),
    Signature(
        id="numerics-onnx-fp16-validation-failed",
        family="numerics",
        title="onnxconverter-common's automatic fp16 conversion found no conversion that keeps the outputs",
        needles=("validation failed for final fp16 model", "validation failed for model with nothing converted"),
        patterns=(
            r"validation failed for final fp16 model",
            r"validation failed for model with nothing converted to fp16",
        ),
        cause="`auto_convert_mixed_precision` converts the graph to fp16 and keeps in fp32 the nodes whose "
        "conversion changes the outputs beyond `rtol`/`atol` (or `validate_fn`), comparing each attempt with the fp32 "
        "model on `feed_dict`. It found no set that passes. When even the model with nothing converted fails, the "
        "comparison itself cannot pass: inputs were cast to fp16 (`keep_io_types=False`), the tolerance is tighter "
        "than fp16's precision (about 1e-3 relative), or the outputs change from run to run (random ops). When "
        "only the final model fails, the attempts were not consistent with each other.",
        fixes=(
            fix(
                "Keep the graph's inputs and outputs in fp32 and compare at fp16's precision: "
                "`auto_convert_mixed_precision(model, feed_dict, rtol=0.01, atol=0.001, keep_io_types=True)`"
            ),
            fix(
                "Or convert by hand and check the outputs yourself: `float16.convert_float_to_float16(model, "
                "keep_io_types=True, op_block_list=float16.DEFAULT_OP_BLOCK_LIST + [...], node_block_list=[...])`"
            ),
        ),
        checks=(),
        sources=(
            "https://github.com/microsoft/onnxconverter-common/blob/master/onnxconverter_common/auto_mixed_precision.py",
            _SOURCE_CONVERTER,
        ),
        examples=("ValueError: validation failed for final fp16 model",),
        near_misses=("ValueError: validation failed for original fp32 model",),
    ),
    Signature(
        id="framework-onnx-fp16-converted-twice",
        family="framework",
        title="onnxconverter-common refused to convert a model that is already float16",
        needles=("already converted to float16",),
        patterns=(r"model is already converted to float16",),
        cause="`convert_float_to_float16` was given a model whose graph is already float16 (converted before, or "
        "exported in fp16); converting it again would insert Casts around Casts and can change the results, so it "
        "refuses unless told to.",
        fixes=(
            fix("Convert the original fp32 model (export it again in fp32), not the converted one"),
            fix("If converting again is meant, pass `check_fp16_ready=False` to `convert_float_to_float16`"),
        ),
        checks=(),
        sources=(_SOURCE_CONVERTER,),
        examples=(
            "ValueError: The model is already converted to float16, if convert again, the model might be wrong. ",
        ),
    ),
]
