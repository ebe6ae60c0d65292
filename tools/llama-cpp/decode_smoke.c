/* Checks that a GGUF from make_gguf.py is a model llama.cpp can run, not only
 * load: decodes a prompt of token ids, then greedy steps, on the CPU.
 *
 *   decode_smoke MODEL.gguf [BACKEND_DIR]
 *
 * Prints the vocabulary size, the ids chosen and the decode time. Built like
 * grammar_bench (see bench_grammar.sh). */
#include <stdio.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
    if (argc < 2) return fprintf(stderr, "usage: decode_smoke MODEL.gguf [BACKEND_DIR]\n"), 2;
    llama_log_set(quiet, NULL);
    if (argc > 2) ggml_backend_load_all_from_path(argv[2]);
    else ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mode = LLAMA_LOAD_MODE_NONE;
    struct llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 64;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    struct llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return fprintf(stderr, "cannot create a context\n"), 1;
    llama_token prompt[8] = {1, 2, 3, 100, 200, 300, 1000, n_vocab - 1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (llama_decode(ctx, llama_batch_get_one(prompt, 8)) != 0) return fprintf(stderr, "prompt decode failed\n"), 1;
    printf("%s: vocab %d; greedy ids:", argv[1], n_vocab);
    for (int step = 0; step < 16; ++step) {
        const float* logits = llama_get_logits_ith(ctx, -1);
        llama_token best = 0;
        for (int32_t i = 1; i < n_vocab; ++i)
            if (logits[i] > logits[best]) best = i;
        printf(" %d", best);
        if (llama_decode(ctx, llama_batch_get_one(&best, 1)) != 0) return fprintf(stderr, "decode failed\n"), 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("; 8-token prompt + 16 steps in %.1f ms\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
