/* Quantises a GGUF with llama.cpp's own quantiser (llama_model_quantize, the
 * library function behind llama-quantize), so scripts/compare-llama.sh needs
 * no llama.cpp build: only the prebuilt libraries of npm node-llama-cpp.
 *
 *   quantize_gguf IN.gguf OUT.gguf [TYPE] [THREADS]
 *
 * TYPE: Q4_K_M (default), Q4_K_S, Q3_K_M, Q3_K_S, Q5_K_M, Q6_K, Q8_0 or F16. Everything else
 * is llama.cpp's default: its per-tensor type choices for the mix, no
 * importance matrix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static const struct {
    const char* name;
    enum llama_ftype ftype;
} TYPES[] = {
    {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},     {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"F16", LLAMA_FTYPE_MOSTLY_F16},
};

int main(int argc, char** argv) {
    if (argc < 3 || argc > 5) return fprintf(stderr, "usage: quantize_gguf IN.gguf OUT.gguf [TYPE] [THREADS]\n"), 2;
    const char* type = argc > 3 ? argv[3] : "Q4_K_M";
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    size_t i = 0;
    for (; i < sizeof TYPES / sizeof TYPES[0]; ++i)
        if (!strcmp(TYPES[i].name, type)) break;
    if (i == sizeof TYPES / sizeof TYPES[0]) return fprintf(stderr, "unknown type %s\n", type), 2;
    qp.ftype = TYPES[i].ftype;
    if (argc > 4) {
        char* end = NULL;
        const long t = strtol(argv[4], &end, 10);
        if (*end != '\0' || t < 1 || t > 256) return fprintf(stderr, "bad thread count %s\n", argv[4]), 2;
        qp.nthread = (int32_t)t;
    }
    llama_backend_init();
    const uint32_t rc = llama_model_quantize(argv[1], argv[2], &qp);
    llama_backend_free();
    if (rc != 0) return fprintf(stderr, "llama_model_quantize failed (%u)\n", rc), 1;
    return 0;
}
