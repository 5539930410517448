// OpenClPreload.h: maps the OpenCL ICD loader and every installed driver into the process without
// calling any of them.
//
// The loader opens every driver its vendor files list at a process's first OpenCL call: here pocl,
// rusticl and clover, each linking LLVM. Preloaded in a fork server before it forks, every child
// starts with them mapped and relocated. No OpenCL call is made, so the server stays free to fork
// children that use OpenCL.
#pragma once

namespace gpufuzz {

/// Idempotent and never fails: a library that cannot be loaded is left to the loader to report.
/// The drivers are those ocl-icd reads: OCL_ICD_FILENAMES when set, else the first line of each
/// .icd file of OCL_ICD_VENDORS or /etc/OpenCL/vendors.
void preloadOpenClLibraries();

}  // namespace gpufuzz
