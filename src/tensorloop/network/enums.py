"""The network API's enums (TensorRT's names): layer types, operations, activation defaults."""

from __future__ import annotations

import enum


class LayerType(enum.Enum):
    """What kind of layer a layer is (TensorRT's ``LayerType``): each layer's ``type``."""

    CONSTANT = "constant"
    ELEMENTWISE = "elementwise"
    ACTIVATION = "activation"
    UNARY = "unary"
    MATRIX_MULTIPLY = "matrix_multiply"
    SHUFFLE = "shuffle"
    SLICE = "slice"
    CONCATENATION = "concatenation"
    REDUCE = "reduce"
    SELECT = "select"
    GATHER = "gather"
    IDENTITY = "identity"
    CAST = "cast"
    SOFTMAX = "softmax"
    TOPK = "topk"
    SHAPE = "shape"
    TRIP_LIMIT = "trip_limit"
    ITERATOR = "iterator"
    RECURRENCE = "recurrence"
    LOOP_OUTPUT = "loop_output"


class ElementWiseOperation(enum.Enum):
    """The binary operation of an elementwise layer (TensorRT's ``ElementWiseOperation``); the
    value is the core op it lowers to (FLOOR_DIV has none of its own)."""

    SUM = "Add"
    PROD = "Mul"
    MAX = "Max"
    MIN = "Min"
    SUB = "Sub"
    DIV = "Div"
    POW = "Pow"
    FLOOR_DIV = "FloorDiv"
    AND = "And"
    OR = "Or"
    XOR = "Xor"
    EQUAL = "Equal"
    GREATER = "Greater"
    LESS = "Less"


class ActivationType(enum.Enum):
    """The function of an activation layer (TensorRT's ``ActivationType``); ``alpha`` and
    ``beta`` parameterize some of them (see ACTIVATION_DEFAULTS)."""

    RELU = "relu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    LEAKY_RELU = "leaky_relu"
    ELU = "elu"
    SELU = "selu"
    SOFTSIGN = "softsign"
    SOFTPLUS = "softplus"
    CLIP = "clip"
    HARD_SIGMOID = "hard_sigmoid"
    SCALED_TANH = "scaled_tanh"
    THRESHOLDED_RELU = "thresholded_relu"
    GELU_ERF = "gelu_erf"
    GELU_TANH = "gelu_tanh"


# alpha and beta each activation starts with; TensorRT starts every one at 0, which for most of
# them is a degenerate function, so these are the functions' usual parameters (docs/network.md)
ACTIVATION_DEFAULTS: dict[ActivationType, tuple[float, float]] = {
    ActivationType.LEAKY_RELU: (0.01, 0.0),
    ActivationType.ELU: (1.0, 0.0),
    ActivationType.SELU: (1.6732632423543772, 1.0507009873554805),
    ActivationType.SOFTPLUS: (1.0, 1.0),
    ActivationType.CLIP: (0.0, 6.0),
    ActivationType.HARD_SIGMOID: (0.2, 0.5),
    ActivationType.SCALED_TANH: (1.0, 1.0),
    ActivationType.THRESHOLDED_RELU: (1.0, 0.0),
}


class UnaryOperation(enum.Enum):
    """The element-wise function of a unary layer (TensorRT's ``UnaryOperation``); the value is
    the core op it lowers to."""

    EXP = "Exp"
    LOG = "Log"
    SQRT = "Sqrt"
    RECIP = "Reciprocal"
    ABS = "Abs"
    NEG = "Neg"
    SIN = "Sin"
    COS = "Cos"
    TAN = "Tan"
    SINH = "Sinh"
    COSH = "Cosh"
    ASIN = "Asin"
    ACOS = "Acos"
    ATAN = "Atan"
    ASINH = "Asinh"
    ACOSH = "Acosh"
    ATANH = "Atanh"
    CEIL = "Ceil"
    FLOOR = "Floor"
    ERF = "Erf"
    NOT = "Not"
    SIGN = "Sign"
    ROUND = "Round"
    ISINF = "IsInf"
    ISNAN = "IsNaN"


class MatrixOperation(enum.Enum):
    """How a matrix multiply layer reads one operand (TensorRT's ``MatrixOperation``): NONE as
    is, TRANSPOSE with its last two dims swapped, VECTOR as a batch of vectors (last dim)."""

    NONE = "none"
    TRANSPOSE = "transpose"
    VECTOR = "vector"


class ReduceOperation(enum.Enum):
    """The reduction of a reduce layer (TensorRT's ``ReduceOperation``); the value is the core
    op it lowers to (AVG: ReduceMean)."""

    SUM = "ReduceSum"
    PROD = "ReduceProd"
    MAX = "ReduceMax"
    MIN = "ReduceMin"
    AVG = "ReduceMean"


class TopKOperation(enum.Enum):
    """Whether a top-k layer keeps the largest (MAX) or smallest (MIN) entries (TensorRT's
    ``TopKOperation``); the value is ONNX TopK's ``largest`` attribute."""

    MAX = 1
    MIN = 0
