/* Times llama.cpp's prefill and greedy decode on a GGUF the way `waste bench`
 * times ours, for scripts/compare-llama.sh (issue 19).
 *
 *   [LOGITS_DUMP_BACKEND_DIR=DIR] bench_llama MODEL.gguf [--mmap] [--no-repack]
 *       [--threads T] [--prompt N] [--gen G] [--seed S]
 *
 * A prompt of N random ids (xorshift seeded by S, uniform over the
 * vocabulary) is decoded as one batch (prefill), then G tokens greedily, one
 * llama_decode each (the first from the prompt's logits, argmax, ties to the
 * lower id). Before timing, one single-token decode and a cleared memory:
 * llama-bench's warm-up, so the first timed step does not pay one-time setup.
 *
 * Weights are read into RAM (no mmap) unless --mmap: then they stay in the
 * page cache, which a memory cgroup can evict (the limited runs) -- except
 * those the CPU backend repacks for its SIMD kernels (Q4_K among them), which
 * it copies to anonymous memory, so an mmap'ed model still needs about its
 * size in RAM that cannot be evicted. --no-repack (use_extra_bufts = false)
 * keeps every weight in the mapping, at the cost of the slower kernels.
 * Default context settings otherwise (F16 KV cache, flash attention auto),
 * as a user of llama.cpp gets them.
 *
 * Output, stdout, one JSON object per line: {"done": k, "elapsed_s": t} after
 * each decoded token (so that a run killed by a timeout or the OOM killer
 * still tells how far it got), then the summary
 * {"decode_tok_s", "prefill_tok_s", "load_s", "decode_s", "prefill_s",
 *  "max_rss_mb", "tokens", "prompt", "threads", "mmap", "ids": [first 8]}. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static long arg_long(const char* s, long lo, long hi, const char* what) {
    char* end = NULL;
    const long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bad %s %s (want %ld..%ld)\n", what, s, lo, hi);
        exit(2);
    }
    return v;
}

static llama_token argmax(const float* logits, int32_t n) {
    llama_token best = 0;
    for (int32_t i = 1; i < n; ++i)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_llama MODEL.gguf [--mmap] [--no-repack] [--threads T] [--prompt N] [--gen G] [--seed S]\n");
        return 2;
    }
    int use_mmap = 0, repack = 1, threads = 1, n_prompt = 64, n_gen = 64;
    uint64_t seed = 1;
    for (int i = 2; i < argc; ++i) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--mmap")) use_mmap = 1;
        else if (!strcmp(argv[i], "--no-repack")) repack = 0;
        else if (!strcmp(argv[i], "--threads") && more) threads = (int)arg_long(argv[++i], 1, 256, "threads");
        else if (!strcmp(argv[i], "--prompt") && more) n_prompt = (int)arg_long(argv[++i], 1, 4096, "prompt");
        else if (!strcmp(argv[i], "--gen") && more) n_gen = (int)arg_long(argv[++i], 1, 4096, "gen");
        else if (!strcmp(argv[i], "--seed") && more) seed = (uint64_t)arg_long(argv[++i], 0, 1L << 40, "seed");
        else return fprintf(stderr, "unknown argument %s\n", argv[i]), 2;
    }
    llama_log_set(quiet, NULL);
    /* the CPU backend variants sit beside libllama in the npm package, not beside this program */
    const char* backend_dir = getenv("LOGITS_DUMP_BACKEND_DIR");
    if (backend_dir) ggml_backend_load_all_from_path(backend_dir);
    else ggml_backend_load_all();
    llama_backend_init();

    const double t_load = now_s();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mode = use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.use_extra_bufts = repack;
    struct llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_gen + 16);
    cp.n_batch = (uint32_t)n_prompt;
    cp.n_ubatch = (uint32_t)n_prompt;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return fprintf(stderr, "cannot create a context\n"), 1;
    const double load_s = now_s() - t_load;

    llama_token* ids = malloc(sizeof(llama_token) * (size_t)(n_prompt + n_gen));
    if (!ids) return fprintf(stderr, "out of memory\n"), 1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < n_prompt; ++i) {  /* xorshift64 */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (llama_token)(x % (uint64_t)n_vocab);
    }

    /* warm-up: one token, then forget it */
    if (llama_decode(ctx, llama_batch_get_one(ids, 1)) != 0) return fprintf(stderr, "warm-up failed\n"), 1;
    llama_memory_clear(llama_get_memory(ctx), true);

    const double t_prefill = now_s();
    if (llama_decode(ctx, llama_batch_get_one(ids, n_prompt)) != 0) return fprintf(stderr, "prefill failed\n"), 1;
    const double prefill_s = now_s() - t_prefill;

    const double t_decode = now_s();
    llama_token next = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    for (int g = 0; g < n_gen; ++g) {
        ids[n_prompt + g] = next;
        if (llama_decode(ctx, llama_batch_get_one(&ids[n_prompt + g], 1)) != 0)
            return fprintf(stderr, "decode failed at step %d\n", g), 1;
        next = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        printf("{\"done\": %d, \"elapsed_s\": %.4f}\n", g + 1, now_s() - t_decode);
        fflush(stdout);
    }
    const double decode_s = now_s() - t_decode;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"decode_tok_s\": %.4f, \"prefill_tok_s\": %.4f, \"load_s\": %.4f, \"decode_s\": %.4f, "
           "\"prefill_s\": %.4f, \"max_rss_mb\": %.1f, \"tokens\": %d, \"prompt\": %d, \"threads\": %d, "
           "\"mmap\": %s, \"repack\": %s, \"ids\": [",
           n_gen / decode_s, n_prompt / prefill_s, load_s, decode_s, prefill_s, ru.ru_maxrss / 1024.0, n_gen,
           n_prompt, threads, use_mmap ? "true" : "false", repack ? "true" : "false");
    for (int g = 0; g < n_gen && g < 8; ++g) printf("%s%d", g ? ", " : "", ids[n_prompt + g]);
    printf("]}\n");
    free(ids);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
