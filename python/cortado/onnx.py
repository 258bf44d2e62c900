"""cortado.onnx: ONNX export and import, the Python side of the export_onnx and import_onnx tools.

    import cortado.onnx
    # A deploy net (or a training net: its data layers become the inputs, its losses are left out)
    # and its weights, to an ONNX model for ONNX Runtime, TensorRT, OpenCV's dnn, ...
    cortado.onnx.export('deploy.prototxt', 'weights.caffemodel', 'model.onnx')
    # An ONNX model (from torch.onnx.export, say) to a net and weights that trainer can train.
    cortado.onnx.import_model('model.onnx', 'net.prototxt', 'net.caffemodel')

Both raise cortado.CortadoError with one line naming the layer or node that cannot be converted, and
write nothing then.
"""
import numbers

from ._cortado import has_onnx, _export_onnx, _import_onnx

__all__ = ['export', 'import_model', 'has_onnx']


def _shape_list(input_shapes):
    """{'data': (1, 3, 224, 224)} or [('data', (1, 3, 224, 224))] -> [('data', [1, 3, 224, 224])]."""
    if not input_shapes:
        return []
    items = input_shapes.items() if hasattr(input_shapes, 'items') else input_shapes
    shapes = []
    for name, shape in items:
        if isinstance(shape, str) or not all(isinstance(d, numbers.Integral) and d > 0 for d in shape):
            raise ValueError('export: input_shapes[%r] must be a shape of positive integers, not %r'
                             % (name, shape))
        shapes.append((str(name), [int(d) for d in shape]))
    return shapes


def export(net_file, weights_file, onnx_file, dynamic_batch=True, input_shapes=None):
    """Writes the net `net_file` (prototxt) with the weights `weights_file` (.caffemodel or
    .caffemodel.h5; None for the weights its fillers make) as the ONNX model `onnx_file`.

    dynamic_batch: axis 0 of the inputs and outputs is the symbolic 'N' (True) or the net's batch size.
    input_shapes: shapes of data layers' tops, {'data': (N, C, H, W)}, for a training net whose data
    cannot be read here (by default the data layer reads one record to learn them).
    """
    _export_onnx(net_file, weights_file, onnx_file, bool(dynamic_batch), _shape_list(input_shapes))


def import_model(onnx_file, net_file, weights_file, batch_size=1):
    """Writes the ONNX model `onnx_file` as the net `net_file` (prototxt, an Input layer per graph
    input) and its weights `weights_file` (.caffemodel).

    batch_size: the Input layers' batch size where the model's batch axis is symbolic.
    """
    _import_onnx(onnx_file, net_file, weights_file, batch_size)
