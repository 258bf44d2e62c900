"""Python net specification (pycaffe's ``caffe.net_spec`` interface).

Nets are described by calling layer constructors on the outputs of other
layers; the resulting graph becomes a ``NetParameter`` (``str()`` of which is
prototxt)::

    import cortado as caffe
    from cortado import layers as L, params as P

    n = caffe.NetSpec()
    n.data, n.label = L.Data(source='train_lmdb', backend=P.Data.LMDB,
                             batch_size=64, ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20,
                            weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.conv1, in_place=True)
    print(n.to_proto())

``layers`` (``L``) and ``params`` (``P``) behave like modules whose contents
are made up on demand: ``L.<Type>(bottom, ..., key=value)`` declares a layer
of type ``<Type>`` fed by the given Tops and configured by the keywords, and
``P.<Type>.<NAME>`` is the enum constant ``NAME`` of ``<Type>Parameter``
(``P.Pooling.MAX``).

Keywords understood by ``L.<Type>``:

* ``ntop=k`` -- number of outputs, 1 unless given.  With one output the call
  returns a Top, with several a tuple of Tops, with none the layer itself
  (a Function).
* ``in_place=True`` -- the outputs are written over the inputs (same blob
  names), as for an in-place ReLU.
* ``name='...'`` -- the layer's name; its output blobs keep theirs.
* a key ending in ``param`` (``param``, ``transform_param``,
  ``convolution_param``, ...) is a field of LayerParameter itself;
* any other key is looked up first in the type's own ``<type>_param``
  message and then in LayerParameter (``include``, ``loss_weight``,
  ``propagate_down``, ...).

Values are translated field by field: a dict fills a message, a list fills a
repeated field (one message per dict for repeated messages), and a lone value
given to a repeated field counts as a list of one.

Naming: ``NetSpec.to_proto`` names each output blob after the NetSpec
attribute that holds it, and each layer after its first output.  Whatever
has no such name is called ``<Type><k>`` with a counter per type
(``Convolution1``, ``Convolution2``, ...); ``Top.to_proto()`` and
``to_proto(*tops)`` use these generated names throughout.  Generated names
may change from one version to the next, as in Caffe.
"""

from collections import Counter, OrderedDict

from google.protobuf import message as _pb_message
from google.protobuf.descriptor import FieldDescriptor as _FD

from .proto import caffe_pb2

__all__ = ['layers', 'params', 'NetSpec', 'Top', 'Function', 'to_proto',
           'assign_proto', 'param_name_dict']

# Layer types whose settings live in a message named after a different type.
# param_name_dict() cannot find these from the schema, and pycaffe misses
# them (L.Deconvolution(x, num_output=...) failed there).
_PARAM_ALIASES = {
    'Deconvolution': 'convolution',
    'Im2col': 'convolution',
    'RNN': 'recurrent',
    'LSTM': 'recurrent',
}

_PARAM_SUFFIX = '_param'
_MESSAGE_SUFFIX = 'Parameter'


def _is_dunder(name):
    """Special names (``__copy__``, ...) are Python protocol probes, never
    layer types, tops or enum constants."""
    return name.startswith('__') and name.endswith('__')


def param_name_dict():
    """Map layer type names to the prefixes of their LayerParameter fields,
    e.g. ``{'Convolution': 'convolution', 'InnerProduct': 'inner_product',
    ...}``.  Built from the schema: each field ``<prefix>_param`` of message
    type ``<Type>Parameter`` gives the entry ``<Type>: <prefix>``."""
    table = {}
    for field in caffe_pb2.LayerParameter.DESCRIPTOR.fields:
        if field.message_type is None or \
                not field.name.endswith(_PARAM_SUFFIX):
            continue
        type_name = field.message_type.name
        if type_name.endswith(_MESSAGE_SUFFIX):
            type_name = type_name[:-len(_MESSAGE_SUFFIX)]
        table[type_name] = field.name[:-len(_PARAM_SUFFIX)]
    return table


def to_proto(*tops):
    """Return a NetParameter holding every layer that the given Tops (or
    top-less Functions) depend on, each layer once, inputs first.  All blob
    and layer names are generated."""
    builder = _NetBuilder()
    for top in tops:
        _check_spec_value(top, 'to_proto argument')
        builder.add(top)
    return builder.net()


# --- assigning Python values to protobuf fields ----------------------------

def _is_message_field(field):
    return field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP)


def _enum_value(field, where, val):
    """Enum fields also take the value's name ('MAX'), besides its number
    (P.Pooling.MAX); other fields take ``val`` unchanged."""
    if field.type != _FD.TYPE_ENUM or not isinstance(val, str):
        return val
    enum = field.enum_type
    member = enum.values_by_name.get(val)
    if member is None:
        raise ValueError('%s: %r is not a value of enum %s (one of %s)'
                         % (where, val, enum.name,
                            ', '.join(enum.values_by_name)))
    return member.number


def _fill_message(msg, fields):
    """Set the fields of ``msg`` from the dict ``fields``; ``msg`` counts as
    present even when ``fields`` is empty."""
    msg.SetInParent()
    for key, value in fields.items():
        assign_proto(msg, key, value)


def _extend_repeated(container, field, where, items):
    if not _is_message_field(field):
        values = [_enum_value(field, where, item) for item in items]
        try:
            container.extend(values)
        except (TypeError, ValueError) as e:
            raise TypeError('%s: %s' % (where, e)) from None
        return
    for item in items:
        if isinstance(item, dict):
            _fill_message(container.add(), item)
        elif isinstance(item, _pb_message.Message):
            container.add().CopyFrom(item)
        else:
            raise TypeError('%s: expected a dict or a message, got %s'
                            % (where, type(item).__name__))


def assign_proto(proto, name, val):
    """Store the Python value ``val`` in field ``name`` of the protobuf
    message ``proto``, converting it by its Python type, recursively:

    * a dict fills a message field, key by key;
    * a list (or tuple) fills a repeated field; for repeated messages each
      element is a dict or a message;
    * a single value given to a repeated field is taken as a one-element
      list (``top='x'`` means ``top=['x']``);
    * a message object is copied into a message field;
    * anything else is assigned as it is (enum fields also accept the
      value's name).

    Raises AttributeError when ``proto`` has no field ``name``, TypeError for
    a list given to a singular field or a dict given to a scalar one."""
    field = proto.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError('%s has no field named %r'
                             % (proto.DESCRIPTOR.name, name))
    where = '%s.%s' % (proto.DESCRIPTOR.name, name)
    as_list = isinstance(val, (list, tuple))
    if field.label == _FD.LABEL_REPEATED:
        _extend_repeated(getattr(proto, name), field, where,
                         list(val) if as_list else [val])
    elif as_list:
        raise TypeError('%s is not a repeated field; cannot assign a list'
                        % where)
    elif isinstance(val, dict):
        if not _is_message_field(field):
            raise TypeError('%s is not a message field; cannot assign a '
                            'dict' % where)
        _fill_message(getattr(proto, name), val)
    elif _is_message_field(field) and isinstance(val, _pb_message.Message):
        getattr(proto, name).CopyFrom(val)
    else:
        value = _enum_value(field, where, val)
        try:
            setattr(proto, name, value)
        except (TypeError, ValueError) as e:
            raise type(e)('%s: %s' % (where, e)) from None


def _apply_layer_keyword(layer, type_name, key, value):
    """Route one keyword of ``L.<type_name>(...)`` to the field it names:
    ``*param`` keys to LayerParameter, others to the type's own parameter
    message when it has that field, else to LayerParameter."""
    if key.endswith('param'):
        assign_proto(layer, key, value)
        return
    prefix = _PARAM_ALIASES.get(type_name, _param_names.get(type_name))
    candidates = [layer]
    if prefix is not None:
        candidates.insert(0, getattr(layer, prefix + _PARAM_SUFFIX))
    for target in candidates:
        if key in target.DESCRIPTOR.fields_by_name:
            assign_proto(target, key, value)
            return
    if prefix is None:
        searched = 'LayerParameter'
    else:
        searched = '%s_param nor in LayerParameter' % prefix
    raise AttributeError('%s layer: no field %r in %s'
                         % (type_name, key, searched))


# --- the graph --------------------------------------------------------------

def _check_spec_value(value, what):
    if not isinstance(value, (Top, Function)):
        raise TypeError('%s is not a Top or a layer (type is %s); assign '
                        'multi-top layers by unpacking, e.g. '
                        'n.data, n.label = L.Data(..., ntop=2)'
                        % (what, type(value)))


def _require_tops(type_name, inputs):
    for position, value in enumerate(inputs):
        if not isinstance(value, Top):
            raise TypeError('%s input %d is not a Top (type is %s)'
                            % (type_name, position, type(value)))


class Top(object):
    """One output blob of a layer: output number ``n`` of the Function
    ``fn``."""

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n

    def to_proto(self):
        """The NetParameter of this blob and everything it depends on (as
        ``to_proto(self)``)."""
        return to_proto(self)

    def __repr__(self):
        return '<Top %d of %s>' % (self.n, self.fn.type_name)


class Function(object):
    """One layer of a net spec: its type, its inputs (Tops of earlier
    layers), its remaining keyword settings (``params``) and its outputs
    (``tops``)."""

    def __init__(self, type_name, inputs, params):
        _require_tops(type_name, inputs)
        self.type_name = type_name
        self.inputs = tuple(inputs)
        # ntop and in_place shape the spec; they are not LayerParameter
        # fields, so they leave the settings here.
        self.ntop = params.pop('ntop', 1)
        if not isinstance(self.ntop, int) or isinstance(self.ntop, bool) \
                or self.ntop < 0:
            raise ValueError('%s layer: ntop must be a number of outputs (0 '
                             'or more), not %r' % (type_name, self.ntop))
        self.in_place = params.pop('in_place', False)
        self.params = params
        self.tops = tuple(Top(self, n) for n in range(self.ntop))

    def __repr__(self):
        return '<Function %s>' % self.type_name


class _NetBuilder(object):
    """Collects the LayerParameters behind a set of Tops, inputs before the
    layers that read them, naming blobs and layers on the way.

    ``names`` holds the names fixed in advance (Top or Function -> name);
    the rest get ``<Type><k>`` from a counter per type, counted in the order
    in which they are first needed."""

    def __init__(self, names=None):
        self.names = dict(names or {})
        self.counters = Counter()
        self.built = OrderedDict()  # Function -> LayerParameter

    def _generated_name(self, type_name):
        self.counters[type_name] += 1
        return '%s%d' % (type_name, self.counters[type_name])

    def _blob_name(self, top):
        if top not in self.names:
            self.names[top] = self._generated_name(top.fn.type_name)
        return self.names[top]

    def _layer_name(self, fn):
        if fn not in self.names:
            if fn.ntop > 0:
                # a layer is named after its first output blob
                self.names[fn] = self._blob_name(fn.tops[0])
            else:
                self.names[fn] = self._generated_name(fn.type_name)
        return self.names[fn]

    def add(self, node):
        """Build the layer behind ``node`` (a Top or a Function) after the
        layers it reads from, unless it is built already."""
        fn = node.fn if isinstance(node, Top) else node
        if fn in self.built:
            return
        bottoms = []
        for source in fn.inputs:
            self.add(source)
            bottoms.append(self.built[source.fn].top[source.n])
        layer = caffe_pb2.LayerParameter(type=fn.type_name, bottom=bottoms)
        if fn.in_place:
            layer.top.extend(bottoms)
        else:
            layer.top.extend([self._blob_name(t) for t in fn.tops])
        layer.name = self._layer_name(fn)
        for key, value in fn.params.items():
            _apply_layer_keyword(layer, fn.type_name, key, value)
        self.built[fn] = layer

    def net(self):
        return caffe_pb2.NetParameter(layer=list(self.built.values()))


class NetSpec(object):
    """A named collection of Tops.  Assign Tops to attributes or items
    (``n.conv1 = ...`` or ``n['conv1'] = ...``); ``to_proto()`` then returns
    the NetParameter of every layer they need, with the assigned names as
    blob and layer names."""

    def __init__(self):
        # written around __setattr__, which stores tops
        object.__setattr__(self, 'tops', OrderedDict())

    def __setattr__(self, name, value):
        self.tops[name] = value

    def __getattr__(self, name):
        # 'tops' itself is missing only on an instance made without __init__
        # (copy, pickle); special names are protocol probes, not tops.
        if name == 'tops' or _is_dunder(name):
            raise AttributeError(name)
        try:
            return self.tops[name]
        except KeyError:
            raise AttributeError('NetSpec has no top named %r' % name)

    def __delattr__(self, name):
        try:
            del self.tops[name]
        except KeyError:
            raise AttributeError('NetSpec has no top named %r' % name)

    def __setitem__(self, key, value):
        self.tops[key] = value

    def __getitem__(self, item):
        return self.tops[item]

    def __contains__(self, item):
        return item in self.tops

    def to_proto(self):
        for name, value in self.tops.items():
            _check_spec_value(value, 'NetSpec.%s' % name)
        # a value assigned under several names takes the last of them
        builder = _NetBuilder(dict((value, name)
                                   for name, value in self.tops.items()))
        for value in self.tops.values():
            builder.add(value)
        return builder.net()


def _call_result(fn):
    """What ``L.<Type>(...)`` returns for the layer ``fn``: the layer when it
    has no outputs, the Top when it has one, else the tuple of Tops."""
    if fn.ntop == 0:
        return fn
    if fn.ntop == 1:
        return fn.tops[0]
    return fn.tops


class Layers(object):
    """The ``L`` pseudo-module: ``Layers().<Type>`` is a constructor for
    layers of that type, so ``Layers().Convolution(bottom, kernel_size=3)``
    is the Top of a 3x3 convolution of ``bottom``."""

    def __getattr__(self, name):
        if _is_dunder(name):
            raise AttributeError(name)

        def make_layer(*bottoms, **settings):
            return _call_result(Function(name, bottoms, settings))
        make_layer.__name__ = name
        return make_layer


class _ParamEnums(object):
    """Enum constants of one <Type>Parameter message (P.Pooling.MAX)."""

    def __init__(self, type_name):
        self._type_name = type_name

    def __getattr__(self, param_name):
        if _is_dunder(param_name):
            raise AttributeError(param_name)
        message = getattr(caffe_pb2, self._type_name + _MESSAGE_SUFFIX, None)
        if message is None:
            raise AttributeError('no message %sParameter in the schema'
                                 % self._type_name)
        try:
            return getattr(message, param_name)
        except AttributeError:
            raise AttributeError('%sParameter has no constant %r'
                                 % (self._type_name, param_name))


class Parameters(object):
    """The ``P`` pseudo-module of enum constants for layer settings:
    ``Parameters().Pooling.MAX`` is PoolingParameter's MAX, the value that
    selects max pooling."""

    def __getattr__(self, name):
        if _is_dunder(name):
            raise AttributeError(name)
        return _ParamEnums(name)


_param_names = param_name_dict()
layers = Layers()
params = Parameters()
