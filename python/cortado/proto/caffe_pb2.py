"""caffe_pb2: Cortado's schema under pycaffe's module name. The schema is wire-compatible with Caffe's
(same messages, field names and numbers), so `from cortado.proto import caffe_pb2` works as in pycaffe."""
from .cortado_pb2 import *  # noqa: F401,F403 (the generated messages and enums)
from .cortado_pb2 import DESCRIPTOR  # noqa: F401
