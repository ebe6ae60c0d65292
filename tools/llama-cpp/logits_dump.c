/* Runs a GGUF in llama.cpp on given token ids and writes every position's
 * logits, so that a test can compare them with an independent reference
 * (python/tests/test_moe_llamacpp.py, issue 16).
 *
 *   [LOGITS_DUMP_BACKEND_DIR=DIR] logits_dump MODEL.gguf OUT.f32 ID [ID ...]
 *
 * OUT.f32 holds n_ids * n_vocab little-endian float32, position-major. The ids
 * are decoded as one batch at positions 0..n-1 in sequence 0, every position
 * marked for output. CPU only, no mmap, one thread (the test machine is
 * shared), and an F32 KV cache with flash attention off: llama.cpp's default
 * F16 cache would round K and V to 11 significant bits, an error that is
 * llama.cpp's choice of storage and not what the comparison is after.
 * Built by the test with cc against the prebuilt libraries of npm
 * node-llama-cpp, with the headers of the llama.cpp release bundled there. */
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
    if (argc < 4) return fprintf(stderr, "usage: logits_dump MODEL.gguf OUT.f32 ID [ID ...]\n"), 2;
    const int n = argc - 3;
    llama_log_set(quiet, NULL);
    /* the CPU backend variants sit beside libllama in the npm package, not beside this program */
    const char* backend_dir = getenv("LOGITS_DUMP_BACKEND_DIR");
    if (backend_dir) ggml_backend_load_all_from_path(backend_dir);
    else ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mode = LLAMA_LOAD_MODE_NONE;
    struct llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n < 256 ? 256 : (uint32_t)n;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return fprintf(stderr, "cannot create a context\n"), 1;

    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; ++i) {
        char* end = NULL;
        const long id = strtol(argv[3 + i], &end, 10);
        if (*end != '\0' || id < 0 || id >= n_vocab) return fprintf(stderr, "bad id %s (vocab %d)\n", argv[3 + i], n_vocab), 2;
        batch.token[i] = (llama_token)id;
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch) != 0) return fprintf(stderr, "decode failed\n"), 1;

    FILE* out = fopen(argv[2], "wb");
    if (!out) return fprintf(stderr, "cannot write %s\n", argv[2]), 1;
    for (int i = 0; i < n; ++i) {
        const float* logits = llama_get_logits_ith(ctx, i);
        if (!logits || fwrite(logits, sizeof(float), (size_t)n_vocab, out) != (size_t)n_vocab)
            return fprintf(stderr, "no logits for position %d\n", i), 1;
    }
    if (fclose(out) != 0) return fprintf(stderr, "cannot write %s\n", argv[2]), 1;
    printf("%d positions x %d logits\n", n, n_vocab);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
