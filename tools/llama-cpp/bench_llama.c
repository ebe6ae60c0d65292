/* Times llama.cpp's prefill and greedy decode on a GGUF the way llama-bench
 * drives llama.cpp, for scripts/compare-llama.sh (issues 19, 41).
 *
 *   [LOGITS_DUMP_BACKEND_DIR=DIR] bench_llama MODEL.gguf [--mmap] [--no-repack]
 *       [--threads T] [--prompt N] [--gen G] [--ids FILE] [--seed S] [--progress] [--no-warmup]
 *
 * As llama-bench does (tools/llama-bench/llama-bench.cpp of the same release,
 * read for these facts): a thread pool of T threads from the CPU backend's
 * ggml_threadpool_new with ggml_threadpool_params_default(T) attached to the
 * context; n_batch 2048 and n_ubatch 512 (its defaults); a warm-up of the
 * whole prompt and one generated token, then the context's memory cleared;
 * nothing printed while a timed phase runs. --no-warmup times a cold
 * process instead (the memory-limited runs, where WASTE is cold too).
 *
 * The prompt: the first N ids of FILE (whitespace-separated; the harness
 * gives both engines the same file), else N random ids (xorshift seeded by
 * S, uniform over the vocabulary). It is decoded in batches of n_batch
 * (prefill), then G tokens greedily, one llama_decode each (the first from
 * the prompt's logits, argmax, ties to the lower id; with N = 0 the first
 * token is id 0 and decode runs at depth 0).
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
 * Output, stdout, one JSON object: {"decode_tok_s", "prefill_tok_s",
 * "load_s", "decode_s", "prefill_s", "max_rss_mb", "tokens", "prompt",
 * "threads", "mmap", "repack", "threadpool", "ids": [first 8 generated]}.
 * --progress (the memory-limited runs, which a timeout or the OOM killer may
 * end) also prints {"done": k, "elapsed_s": t} after each decoded token, so
 * that such a run still tells how far it got; a timed loop then writes a
 * line a token. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
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

/* The prompt's ids from a file of whitespace-separated ids: the first n. */
static int read_ids(const char* path, llama_token* ids, int n, int32_t n_vocab) {
    FILE* f = fopen(path, "r");
    if (!f) return fprintf(stderr, "cannot read %s\n", path), 0;
    int got = 0;
    long id;
    while (got < n && fscanf(f, "%ld", &id) == 1) {
        if (id < 0 || id >= n_vocab) return fclose(f), fprintf(stderr, "%s: id %ld is outside the vocabulary (%d)\n", path, id, n_vocab), 0;
        ids[got++] = (llama_token)id;
    }
    fclose(f);
    if (got < n) return fprintf(stderr, "%s holds %d ids, the prompt wants %d\n", path, got, n), 0;
    return 1;
}

/* Decodes the prompt in batches of n_batch, as llama-bench's test_prompt. */
static int decode_prompt(struct llama_context* ctx, llama_token* ids, int n_prompt, int n_batch) {
    for (int done = 0; done < n_prompt; done += n_batch) {
        const int n = n_prompt - done < n_batch ? n_prompt - done : n_batch;
        if (llama_decode(ctx, llama_batch_get_one(ids + done, n)) != 0) return 0;
    }
    llama_synchronize(ctx);
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_llama MODEL.gguf [--mmap] [--no-repack] [--threads T] [--prompt N] [--gen G] [--ids FILE] [--seed S] [--progress] [--no-warmup]\n");
        return 2;
    }
    int use_mmap = 0, repack = 1, threads = 1, n_prompt = 64, n_gen = 64, progress = 0, warmup = 1;
    const char* ids_path = NULL;
    uint64_t seed = 1;
    for (int i = 2; i < argc; ++i) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--mmap")) use_mmap = 1;
        else if (!strcmp(argv[i], "--no-repack")) repack = 0;
        else if (!strcmp(argv[i], "--threads") && more) threads = (int)arg_long(argv[++i], 1, 256, "threads");
        else if (!strcmp(argv[i], "--prompt") && more) n_prompt = (int)arg_long(argv[++i], 0, 65536, "prompt");
        else if (!strcmp(argv[i], "--gen") && more) n_gen = (int)arg_long(argv[++i], 0, 4096, "gen");
        else if (!strcmp(argv[i], "--ids") && more) ids_path = argv[++i];
        else if (!strcmp(argv[i], "--progress")) progress = 1;
        else if (!strcmp(argv[i], "--no-warmup")) warmup = 0;
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
    const int n_batch = 2048, n_ubatch = 512;  /* llama-bench's defaults */
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_gen + 16);
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return fprintf(stderr, "cannot create a context\n"), 1;
    /* the CPU backend's thread pool, attached as llama-bench attaches it */
    ggml_backend_reg_t cpu = ggml_backend_dev_backend_reg(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    typedef struct ggml_threadpool* (*threadpool_new_fn)(struct ggml_threadpool_params*);
    typedef void (*threadpool_free_fn)(struct ggml_threadpool*);
    threadpool_new_fn threadpool_new = (threadpool_new_fn)ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new");
    threadpool_free_fn threadpool_free = (threadpool_free_fn)ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_free");
    if (!threadpool_new || !threadpool_free) return fprintf(stderr, "the CPU backend has no ggml_threadpool_new\n"), 1;
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    struct ggml_threadpool* pool = threadpool_new(&tpp);
    if (!pool) return fprintf(stderr, "cannot make a thread pool of %d\n", threads), 1;
    llama_attach_threadpool(ctx, pool, NULL);
    const double load_s = now_s() - t_load;

    llama_token* ids = malloc(sizeof(llama_token) * (size_t)(n_prompt + n_gen + 1));
    if (!ids) return fprintf(stderr, "out of memory\n"), 1;
    if (ids_path) {
        if (!read_ids(ids_path, ids, n_prompt, n_vocab)) return 1;
    } else {
        uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
        for (int i = 0; i < n_prompt; ++i) {  /* xorshift64 */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ids[i] = (llama_token)(x % (uint64_t)n_vocab);
        }
    }

    /* warm-up, as llama-bench's: the whole prompt, one generated token, then forgotten */
    if (warmup) {
        llama_token first = 0;
        if (n_prompt > 0) {
            if (!decode_prompt(ctx, ids, n_prompt, n_batch)) return fprintf(stderr, "warm-up prompt failed\n"), 1;
            first = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
        if (n_gen > 0 && llama_decode(ctx, llama_batch_get_one(&first, 1)) != 0) return fprintf(stderr, "warm-up token failed\n"), 1;
        llama_memory_clear(llama_get_memory(ctx), true);
    }

    const double t_prefill = now_s();
    if (n_prompt > 0 && !decode_prompt(ctx, ids, n_prompt, n_batch)) return fprintf(stderr, "prefill failed\n"), 1;
    const double prefill_s = now_s() - t_prefill;

    const double t_decode = now_s();
    llama_token next = n_prompt > 0 ? argmax(llama_get_logits_ith(ctx, -1), n_vocab) : 0;
    for (int g = 0; g < n_gen; ++g) {
        ids[n_prompt + g] = next;
        if (llama_decode(ctx, llama_batch_get_one(&ids[n_prompt + g], 1)) != 0)
            return fprintf(stderr, "decode failed at step %d\n", g), 1;
        next = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        if (progress) {
            printf("{\"done\": %d, \"elapsed_s\": %.4f}\n", g + 1, now_s() - t_decode);
            fflush(stdout);
        }
    }
    const double decode_s = now_s() - t_decode;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"decode_tok_s\": %.4f, \"prefill_tok_s\": %.4f, \"load_s\": %.4f, \"decode_s\": %.4f, "
           "\"prefill_s\": %.4f, \"max_rss_mb\": %.1f, \"tokens\": %d, \"prompt\": %d, \"threads\": %d, "
           "\"mmap\": %s, \"repack\": %s, \"threadpool\": true, \"warmup\": %s, \"ids\": [",
           n_gen > 0 ? n_gen / decode_s : 0.0, n_prompt > 0 ? n_prompt / prefill_s : 0.0, load_s, decode_s, prefill_s, ru.ru_maxrss / 1024.0, n_gen,
           n_prompt, threads, use_mmap ? "true" : "false", repack ? "true" : "false", warmup ? "true" : "false");
    for (int g = 0; g < n_gen && g < 8; ++g) printf("%s%d", g ? ", " : "", ids[n_prompt + g]);
    printf("]}\n");
    free(ids);
    llama_free(ctx);
    threadpool_free(pool);
    llama_model_free(model);
    return 0;
}
