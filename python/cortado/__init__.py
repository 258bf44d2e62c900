"""cortado: Cortado's Python interface, with pycaffe's API, so that `import cortado as caffe` (and
`from cortado import layers as L, params as P`) runs pycaffe scripts unchanged.

Inside `trainer` (a net with Python layers) the extension is built into the program as
_cortado_embedded; everywhere else it is the extension module cortado._cortado.
"""
import sys as _sys

if '_cortado_embedded' in _sys.builtin_module_names:
    import _cortado_embedded as _cortado
    _sys.modules[__name__ + '._cortado'] = _cortado
else:
    from . import _cortado

from ._cortado import (Blob, CortadoError, Layer, has_gpu, has_nccl, has_onnx, init_log, layer_type_list,
                       set_device, set_mode_cpu, set_mode_gpu, set_random_seed, solver_count, solver_rank)
from .pycaffe import (AdaDeltaSolver, AdaGradSolver, AdamSolver, Net, NesterovSolver, RMSPropSolver,
                      SGDSolver, Solver, get_solver)
from .proto.caffe_pb2 import TEST, TRAIN
from . import io
from . import onnx
from .classifier import Classifier
from .detector import Detector
from .net_spec import NetSpec, layers, params, to_proto

__version__ = '1.0.0'
