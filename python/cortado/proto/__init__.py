"""cortado.proto: the schema's Python module (protoc's cortado_pb2), also under pycaffe's name caffe_pb2."""
