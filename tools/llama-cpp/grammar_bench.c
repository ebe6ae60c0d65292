/* llama.cpp's grammar sampling, timed the way WASTE's GrammarBench.DISABLED_MaskCost
 * times its mask (tests/grammar_test.cpp): random-logit generations under a
 * GBNF grammar over a model's full vocabulary.
 *
 *   grammar_bench MODEL.gguf GRAMMAR.gbnf [MIN_MASKS=3000] [BACKEND_DIR]
 *
 * Per step: N(0, 3) logits (a block of 2n normals drawn once, read at a random
 * offset, as the WASTE benchmark does) into a llama_token_data_array over all
 * n tokens; llama_sampler_apply of the grammar sampler is timed (wall clock
 * and the thread's CPU time); the argmax of the allowed is accepted into the
 * grammar. A generation ends at an end-of-generation token or after 400
 * steps; generations run until MIN_MASKS masks were timed (3,000: 8
 * generations when none ends early, as in the WASTE benchmark).
 * Prints median, p99 and max of both times (and, to stderr, the first
 * generation's first 200 tokens); and the same for the path llama.cpp's
 * common sampler takes by default: the unconstrained choice checked alone,
 * the full mask only when the grammar rejects it.
 *
 * GBNF: WASTE's rule names use '_', which llama.cpp's parser does not accept
 * in names: every '_' outside literals and character classes becomes '-'.
 *
 * Built by bench_grammar.sh against llama.cpp's headers (from the git bundle
 * in node-llama-cpp) and the prebuilt CPU libraries of @node-llama-cpp/linux-x64. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static uint64_t rng_state = 42;
static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double uniform(void) { return ((double)(next_u64() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static double now_ms(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
static int by_value(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}
static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static char* read_gbnf(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) return perror(path), NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = malloc((size_t)n + 1);
    const size_t got = fread(text, 1, (size_t)n, f);
    text[got] = 0;
    fclose(f);
    int in_literal = 0, in_class = 0, in_comment = 0;
    for (char* p = text; *p; ++p) {
        if (in_comment) {
            in_comment = *p != '\n';
        } else if (in_literal || in_class) {
            if (*p == '\\' && p[1]) ++p;
            else if (in_literal && *p == '"') in_literal = 0;
            else if (in_class && *p == ']') in_class = 0;
        } else if (*p == '"') in_literal = 1;
        else if (*p == '[') in_class = 1;
        else if (*p == '#') in_comment = 1;
        else if (*p == '_') *p = '-';
    }
    return text;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: grammar_bench MODEL.gguf GRAMMAR.gbnf [MIN_MASKS=3000] [BACKEND_DIR]\n");
        return 2;
    }
    const long min_masks = argc > 3 ? atol(argv[3]) : 3000;
    llama_log_set(quiet, NULL);
    if (argc > 4) ggml_backend_load_all_from_path(argv[4]);
    else ggml_backend_load_all();
    llama_backend_init();

    struct llama_model_params params = llama_model_default_params();
    params.n_gpu_layers = 0;
    params.load_mode = LLAMA_LOAD_MODE_NONE; /* no mmap */
    struct llama_model* model = llama_model_load_from_file(argv[1], params);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const struct llama_vocab* vocab = llama_model_get_vocab(model);
    const int32_t n = llama_vocab_n_tokens(vocab);

    char* gbnf = read_gbnf(argv[2]);
    if (!gbnf) return 1;
    const double compile_start = now_ms(CLOCK_MONOTONIC);
    struct llama_sampler* grammar = llama_sampler_init_grammar(vocab, gbnf, "root");
    const double compile_ms = now_ms(CLOCK_MONOTONIC) - compile_start;
    if (!grammar) return fprintf(stderr, "llama.cpp refused the grammar %s\n", argv[2]), 1;

    float* noise = malloc(sizeof(float) * 2 * (size_t)n);
    for (int32_t i = 0; i < 2 * n; i += 2) { /* Box-Muller, sigma 3 */
        const double r = sqrt(-2.0 * log(uniform())), a = 6.283185307179586 * uniform();
        noise[i] = (float)(3.0 * r * cos(a));
        noise[i + 1] = (float)(3.0 * r * sin(a));
    }
    llama_token_data* data = malloc(sizeof(llama_token_data) * (size_t)n);
    size_t capacity = 4096, count = 0;
    double* wall = malloc(sizeof(double) * capacity);
    double* cpu = malloc(sizeof(double) * capacity);
    double* served_wall = malloc(sizeof(double) * capacity);
    double* served_cpu = malloc(sizeof(double) * capacity);
    long rejections = 0;
    long tokens = 0, outputs = 0, allowed_total = 0;
    const double bench_start = now_ms(CLOCK_MONOTONIC);
    for (int run = 0; (long)count < min_masks; ++run) {
        if (run > 0) llama_sampler_reset(grammar);
        for (int step = 0; step < 400; ++step) {
            const size_t offset = next_u64() % (size_t)n;
            for (int32_t i = 0; i < n; ++i) {
                data[i].id = i;
                data[i].logit = noise[offset + (size_t)i];
                data[i].p = 0.0f;
            }
            /* llama.cpp's common sampler (llama-server, llama-cli) first checks the
             * unconstrained choice alone and masks the whole vocabulary only when
             * the grammar rejects it: that path's cost is timed beside the full mask.
             * Its token is the same (the argmax of all, when allowed, is the argmax
             * of the allowed), so both are measured along the same generations. */
            int32_t top = 0;
            for (int32_t i = 1; i < n; ++i)
                if (data[i].logit > data[top].logit) top = i;
            llama_token_data one = {top, 1.0f, 0.0f};
            llama_token_data_array single = {&one, 1, -1, false};
            const double check_wall_start = now_ms(CLOCK_MONOTONIC), check_cpu_start = now_ms(CLOCK_THREAD_CPUTIME_ID);
            llama_sampler_apply(grammar, &single);
            const double check_cpu = now_ms(CLOCK_THREAD_CPUTIME_ID) - check_cpu_start,
                         check_wall = now_ms(CLOCK_MONOTONIC) - check_wall_start;
            const int rejected = one.logit == -INFINITY;
            rejections += rejected;
            llama_token_data_array candidates = {data, (size_t)n, -1, false};
            const double wall_start = now_ms(CLOCK_MONOTONIC), cpu_start = now_ms(CLOCK_THREAD_CPUTIME_ID);
            llama_sampler_apply(grammar, &candidates);
            const double cpu_ms = now_ms(CLOCK_THREAD_CPUTIME_ID) - cpu_start, wall_ms = now_ms(CLOCK_MONOTONIC) - wall_start;
            if (count == capacity) {
                capacity *= 2;
                wall = realloc(wall, sizeof(double) * capacity);
                cpu = realloc(cpu, sizeof(double) * capacity);
                served_wall = realloc(served_wall, sizeof(double) * capacity);
                served_cpu = realloc(served_cpu, sizeof(double) * capacity);
            }
            served_wall[count] = check_wall + (rejected ? wall_ms : 0.0);
            served_cpu[count] = check_cpu + (rejected ? cpu_ms : 0.0);
            wall[count] = wall_ms;
            cpu[count++] = cpu_ms;
            if (count % 500 == 0)
                fprintf(stderr, "[%zu masks in %.0f s]\n", count, (now_ms(CLOCK_MONOTONIC) - bench_start) * 1e-3);
            size_t best = 0;
            for (size_t i = 0; i < candidates.size; ++i) {
                if (candidates.data[i].logit > candidates.data[best].logit) best = i;
                allowed_total += candidates.data[i].logit != -INFINITY;
            }
            if (candidates.data[best].logit == -INFINITY) return fprintf(stderr, "no token allowed at step %d\n", step), 1;
            const llama_token id = candidates.data[best].id;
            llama_sampler_accept(grammar, id);
            if (run == 0 && step < 200) { /* the first generation's start, to stderr: a look at what it writes */
                char piece[256];
                const int32_t length = llama_token_to_piece(vocab, id, piece, sizeof piece, 0, true);
                if (length > 0) fwrite(piece, 1, (size_t)length, stderr);
                if (step == 199) fputc('\n', stderr);
            }
            ++tokens;
            if (llama_vocab_is_eog(vocab, id)) {
                ++outputs;
                break;
            }
        }
    }
    qsort(wall, count, sizeof(double), by_value);
    qsort(cpu, count, sizeof(double), by_value);
    printf("llama.cpp, %s (vocab %d): compile %.1f ms; %ld tokens, %ld complete outputs, %.0f allowed per mask on average; "
           "mask per token median %.3f ms, p99 %.3f ms, max %.3f ms; thread CPU time median %.3f ms, p99 %.3f ms, max %.3f ms\n",
           argv[1], n, compile_ms, tokens, outputs, (double)allowed_total / (double)count,
           wall[count / 2], wall[count * 99 / 100], wall[count - 1], cpu[count / 2], cpu[count * 99 / 100], cpu[count - 1]);
    qsort(served_wall, count, sizeof(double), by_value);
    qsort(served_cpu, count, sizeof(double), by_value);
    printf("llama.cpp, %s, check first and mask when rejected (common_sampler_sample): the unconstrained argmax rejected at %ld of "
           "%zu steps; per token median %.3f ms, p99 %.3f ms, max %.3f ms; thread CPU time median %.3f ms, p99 %.3f ms, max %.3f ms\n",
           argv[1], rejections, count, served_wall[count / 2], served_wall[count * 99 / 100], served_wall[count - 1],
           served_cpu[count / 2], served_cpu[count * 99 / 100], served_cpu[count - 1]);
    llama_sampler_free(grammar);
    free(served_wall);
    free(served_cpu);
    llama_model_free(model);
    free(gbnf);
    free(noise);
    free(data);
    free(wall);
    free(cpu);
    return 0;
}
