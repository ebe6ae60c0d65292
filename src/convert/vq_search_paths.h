// vq_search_paths.h — the search kernels vq_search.cpp dispatches to that
// live in their own translation units (internal to src/convert).
#pragma once

#include <cstddef>
#include <cstdint>

#include "convert/vq_search.h"

namespace waste::convert::detail {

// AVX-512F: the exhaustive search, 16 centroids per register (vq_search_avx512.cpp).
// Only call where avx512_search_available().
void nearest_avx512(const SearchBook& book, const float* vectors, size_t count, uint8_t* out);

}  // namespace waste::convert::detail
