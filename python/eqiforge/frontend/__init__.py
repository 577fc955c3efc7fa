"""The PyTorch front end: capture a function or module and translate it to IR text.

    >>> from eqiforge.frontend import to_ir
    >>> r = to_ir(lambda x, w: torch.relu(x @ w), torch.randn(4, 8), torch.randn(8, 16))
    >>> print(r.text)            # (program ... (output out [m n] (max2 (matmul k x w) 0)))
    >>> r.input_tensors(x, w)    # {IR input name: tensor in the IR layout}

Dims are named by unifying shapes through the graph (DESIGN §2.1); operators
the IR cannot express raise UnsupportedOpError naming the op and the user's
source line.
"""

from .capture import Graph, InputSpec, capture
from .errors import FrontendError, UnsupportedOpError
from .result import FrontendResult, InputInfo, OutputInfo
from .translate import translate, to_ir

__all__ = [
    "FrontendError",
    "FrontendResult",
    "Graph",
    "InputInfo",
    "InputSpec",
    "OutputInfo",
    "UnsupportedOpError",
    "capture",
    "to_ir",
    "translate",
]
