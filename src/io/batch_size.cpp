// batch_size.cpp — setting the batch size of a net's (or a solver's nets') data layers.
#include "cortado/batch_size.hpp"

#include "cortado/error.hpp"
#include "cortado/io.hpp"

namespace cortado {

namespace {

void SetFirstDim(BlobShape* shape, int batch) {
  if (shape->dim_size() > 0) shape->set_dim(0, batch);
}

NetParameter ReadNet(const std::string& path) {
  NetParameter net;
  ReadProtoFromTextFile(path, &net);
  return net;
}

}  // namespace

int SetBatchSize(NetParameter* net, int batch) {
  CORTADO_REQUIRE(batch > 0, "the batch size must be positive, not ", batch);
  int changed = 0;
  for (int i = 0; i < net->input_shape_size(); ++i, ++changed) SetFirstDim(net->mutable_input_shape(i), batch);
  for (int i = 0; i < net->input_dim_size(); i += 4, ++changed) net->set_input_dim(i, batch);
  for (LayerParameter& layer : *net->mutable_layer()) {
    const std::string& type = layer.type();
    if (type == "Input") {
      for (BlobShape& shape : *layer.mutable_input_param()->mutable_shape()) SetFirstDim(&shape, batch);
    } else if (type == "DummyData") {
      DummyDataParameter* p = layer.mutable_dummy_data_param();
      for (BlobShape& shape : *p->mutable_shape()) SetFirstDim(&shape, batch);
      for (int i = 0; i < p->num_size(); ++i) p->set_num(i, batch);
    } else if (type == "Data") {
      layer.mutable_data_param()->set_batch_size(batch);
    } else if (type == "ImageData") {
      layer.mutable_image_data_param()->set_batch_size(batch);
    } else if (type == "HDF5Data") {
      layer.mutable_hdf5_data_param()->set_batch_size(batch);
    } else if (type == "WindowData") {
      layer.mutable_window_data_param()->set_batch_size(batch);
    } else if (type == "MemoryData") {
      layer.mutable_memory_data_param()->set_batch_size(batch);
    } else {
      continue;
    }
    ++changed;
  }
  return changed;
}

void InlineNetFiles(SolverParameter* solver) {
  if (solver->has_train_net()) *solver->mutable_train_net_param() = ReadNet(solver->train_net());
  solver->clear_train_net();
  if (solver->has_net()) *solver->mutable_net_param() = ReadNet(solver->net());
  solver->clear_net();
  // test_net_param comes before test_net in the solver's order of test nets, so appending keeps it.
  for (const std::string& path : solver->test_net()) *solver->add_test_net_param() = ReadNet(path);
  solver->clear_test_net();
}

void SetBatchSize(SolverParameter* solver, int batch) {
  int changed = 0;
  InlineNetFiles(solver);
  if (solver->has_train_net_param()) changed += SetBatchSize(solver->mutable_train_net_param(), batch);
  if (solver->has_net_param()) changed += SetBatchSize(solver->mutable_net_param(), batch);
  for (NetParameter& net : *solver->mutable_test_net_param()) changed += SetBatchSize(&net, batch);
  CORTADO_REQUIRE(changed > 0, "--batch_size: the solver's nets have no data or input layer whose batch could be set");
}

}  // namespace cortado
