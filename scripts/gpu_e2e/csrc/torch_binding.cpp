// Registers `scale_add` under the namespace TORCH_EXTENSION_NAME (set by torch's
// BuildExtension from the extension's name, `_scale_add_cuda_<hash>`), as kernel-builder
// builds do, and gives Python an empty limited-API module of that name to import.
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>
#include <torch/library.h>

void scale_add(at::Tensor &out, const at::Tensor &x, const at::Tensor &y, double alpha);

// One level of indirection so that TORCH_EXTENSION_NAME is expanded before pasting.
#define E2E_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)
#define E2E_CONCAT(a, b) a##b
#define E2E_PYINIT(ns) E2E_CONCAT(PyInit_, ns)
#define E2E_STR2(s) #s
#define E2E_STR(s) E2E_STR2(s)

E2E_LIBRARY(TORCH_EXTENSION_NAME, m) {
  m.def("scale_add(Tensor! out, Tensor x, Tensor y, float alpha) -> ()");
  m.impl("scale_add", c10::kCUDA, &scale_add);
}

static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, E2E_STR(TORCH_EXTENSION_NAME), nullptr,
                                 0, nullptr};

PyMODINIT_FUNC E2E_PYINIT(TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module_def); }
