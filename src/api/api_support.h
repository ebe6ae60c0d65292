// api_support.h — the exception-to-status boundary shared by the C API files.
#pragma once

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "platform/error.h"
#include "platform/thread_pool.h"

namespace waste::api {

inline void set_error(waste_error* error, waste_status status, const char* message) {
    if (!error) return;
    error->status = status;
    std::strncpy(error->message, message, WASTE_ERROR_MESSAGE_BYTES - 1);
    error->message[WASTE_ERROR_MESSAGE_BYTES - 1] = '\0';
}

template <typename Body>
waste_status guarded(waste_error* error, Body&& body) noexcept {
    try {
        body();
        if (error) {
            error->status = WASTE_OK;
            error->message[0] = '\0';
        }
        return WASTE_OK;
    } catch (const Error& e) {
        set_error(error, e.status(), e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_error(error, WASTE_ERR_OUT_OF_MEMORY, "out of memory");
        return WASTE_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_error(error, WASTE_ERR_INTERNAL, e.what());
        return WASTE_ERR_INTERNAL;
    } catch (...) {
        set_error(error, WASTE_ERR_INTERNAL, "unknown exception");
        return WASTE_ERR_INTERNAL;
    }
}

static_assert(WASTE_MAX_THREADS == platform::max_pool_threads, "waste.h's bound is the thread pool's");

// A thread count a caller asked for (0 = one per core); `what` names the
// function and option, e.g. "waste_model_open: threads".
inline void check_threads(uint64_t threads, const char* what) {
    if (threads > WASTE_MAX_THREADS)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{} {} is above the limit of {} (WASTE_MAX_THREADS: more threads than cores only take turns)",
             what, threads, WASTE_MAX_THREADS);
}

// A malloc'ed copy the caller frees with waste_string_free.
inline char* to_c_string(const std::string& text) {
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, text.c_str(), text.size() + 1);
    return copy;
}

}  // namespace waste::api
