// logprob_api.cpp — next-token log-probabilities of a token sequence, for
// perplexity (`waste perplexity`): the engine's own forward pass, each row
// of a chunk through the final norm and LM head (model::ForwardContext's
// scoring rows), so the session ends exactly as waste_session_eval leaves it.
#include <vector>

#include "api/api_support.h"
#include "api/model_handle.h"
#include "api/session_handle.h"

using waste::api::guarded;

extern "C" {

waste_status waste_session_eval_logprobs(waste_session* session, const int32_t* tokens, size_t count,
                                         double* out_logprobs, size_t logprob_count, waste_error* error) {
    return guarded(error, [&] {
        if (!session || !tokens || count == 0)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_logprobs: session and at least one token are required");
        if (logprob_count != count - 1)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_logprobs: logprob_count is {}, must be count - 1 = {}",
                        logprob_count, count - 1);
        if (logprob_count && !out_logprobs)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_logprobs: out_logprobs is required for {} tokens", count);
        // Every id is checked before anything runs, so a bad one leaves the
        // session as it was (the forward pass would reset it half-way).
        const int64_t vocab = session->model->container->config().vocab;
        for (size_t i = 0; i < count; ++i)
            if (tokens[i] < 0 || tokens[i] >= vocab)
                waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_session_eval_logprobs: token {} (id {}) is outside the vocabulary of {}",
                            i, tokens[i], vocab);
        session->flush_pending();
        session->session->eval(tokens, count, nullptr, logprob_count ? out_logprobs : nullptr);
    });
}

}  // extern "C"
