// torch_npu's caching-allocator header as npurt provides it to C++ extensions built against
// torch_npu (`<torch_npu>/include` on the include path, as torch.utils.cpp_extension builds do).
//
// npurt's caching allocator is Python (npurt.torch.caching, npurt.torch.pluggable) and there is
// no libtorch_npu.so to link, so this header declares the types of torch_npu's allocator
// interface only. They are torch's own, as torch_npu's header has them
// (torch_npu/csrc/core/npu/NPUCachingAllocator.h: `using c10::CachingAllocator::StatArray`, ...,
// `using c10::CachingDeviceAllocator::DeviceStats`). A pluggable allocator library implements
// torch_npu's two functions (NPUPluggableAllocator):
//     void *alloc(ssize_t size, int device, aclrtStream stream);
//     void free(void *ptr, ssize_t size, int device, aclrtStream stream);
// and gets npu memory from aclrtMalloc* of npurt's libascendcl (`npurt cann-home`).
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace c10_npu {
namespace NPUCachingAllocator {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingAllocator::StatTypes;
using c10::CachingDeviceAllocator::DeviceStats;

} // namespace NPUCachingAllocator
} // namespace c10_npu
