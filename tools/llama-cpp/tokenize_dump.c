/* Tokenises texts with a GGUF's own vocabulary in llama.cpp, so that a test
 * can compare them with WASTE's tokenizer built from the same file
 * (python/tests/test_gguf_convert.py, issue 39).
 *
 *   [LOGITS_DUMP_BACKEND_DIR=DIR] tokenize_dump MODEL.gguf TEXTS.bin
 *
 * TEXTS.bin holds texts, each a little-endian u32 byte count then its UTF-8
 * bytes. For each text one line goes to stdout: the ids separated by spaces.
 * The vocabulary alone is loaded; no BOS or EOS is added (add_special false)
 * and special tokens in the text are matched (parse_special true), as
 * Hugging Face's encode(add_special_tokens=False) does.
 * Built by the test with cc against the prebuilt libraries of npm
 * node-llama-cpp, with the headers of the llama.cpp release bundled there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
    if (argc != 3) return fprintf(stderr, "usage: tokenize_dump MODEL.gguf TEXTS.bin\n"), 2;
    llama_log_set(quiet, NULL);
    const char* backend_dir = getenv("LOGITS_DUMP_BACKEND_DIR");
    if (backend_dir) ggml_backend_load_all_from_path(backend_dir);
    else ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.vocab_only = 1;
    struct llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const struct llama_vocab* vocab = llama_model_get_vocab(model);

    FILE* in = fopen(argv[2], "rb");
    if (!in) return fprintf(stderr, "cannot read %s\n", argv[2]), 1;
    uint8_t head[4];
    while (fread(head, 1, 4, in) == 4) {
        const uint32_t bytes = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
        if (bytes > (1u << 24)) return fprintf(stderr, "a text of %u bytes\n", bytes), 2;
        char* text = malloc(bytes + 1);
        llama_token* ids = malloc(sizeof(llama_token) * ((size_t)bytes + 8));
        if (!text || !ids || fread(text, 1, bytes, in) != bytes) return fprintf(stderr, "truncated %s\n", argv[2]), 2;
        const int32_t n = llama_tokenize(vocab, text, (int32_t)bytes, ids, (int32_t)bytes + 8, 0, 1);
        if (n < 0) return fprintf(stderr, "tokenize failed (%d)\n", n), 1;
        for (int32_t i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
        free(text);
        free(ids);
    }
    fclose(in);
    llama_model_free(model);
    return 0;
}
