/* Dumps what the llama.cpp comparison needs from WASTE, over the public C API
 * (include/waste/waste.h) only:
 *
 *   waste_vocab model DIR OUT.tsv     a container's tokenizer
 *   waste_vocab ranks FILE OUT.tsv    a tiktoken rank file, pattern kimi, no specials
 *   waste_vocab gbnf SCHEMA.json      the GBNF WASTE translates a JSON Schema into
 *
 * OUT.tsv: a header line "# count N bos B eos E" (-1: none), then one line per
 * id: "id<TAB>kind<TAB>hex bytes", kind n (ordinary bytes), s (a special: its
 * text, which plain-mode detokenization leaves out) or r (reserved: no bytes). Read by make_gguf.py.
 *
 * Build (bench_grammar.sh does it): cc -O2 -Iinclude waste_vocab.c
 * build/release/libwaste.a -lstdc++ -ldeflate -luring -lpcre2-8 -lfmt -lm -lpthread */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waste/waste.h"

static int fail(const char* what, const waste_error* error) {
    fprintf(stderr, "waste_vocab: %s: %s\n", what, error->message);
    return 1;
}

static char* read_all(const char* path, size_t* length) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = malloc((size_t)n + 1);
    *length = fread(text, 1, (size_t)n, f);
    text[*length] = 0;
    fclose(f);
    return text;
}

int main(int argc, char** argv) {
    waste_error error = {0};
    if (argc == 3 && strcmp(argv[1], "gbnf") == 0) {
        size_t length = 0;
        char* schema = read_all(argv[2], &length);
        if (!schema) return perror(argv[2]), 1;
        char* gbnf = NULL;
        if (waste_json_schema_to_gbnf(schema, length, &gbnf, &error) != WASTE_OK) return fail("schema", &error);
        fputs(gbnf, stdout);
        waste_string_free(gbnf);
        free(schema);
        return 0;
    }
    if (argc != 4 || (strcmp(argv[1], "model") != 0 && strcmp(argv[1], "ranks") != 0)) {
        fprintf(stderr, "usage: waste_vocab model DIR OUT.tsv | ranks FILE OUT.tsv | gbnf SCHEMA.json\n");
        return 2;
    }
    waste_model* model = NULL;
    waste_tokenizer* tokenizer = NULL;
    if (strcmp(argv[1], "model") == 0) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.context_length = 64;
        options.threads = 1;
        if (waste_model_open(argv[2], &options, &model, &error) != WASTE_OK) return fail(argv[2], &error);
        if (waste_model_tokenizer(model, NULL, &tokenizer, &error) != WASTE_OK) return fail("tokenizer", &error);
    } else if (waste_tokenizer_open(argv[2], "kimi", NULL, &tokenizer, &error) != WASTE_OK) {
        return fail(argv[2], &error);
    }
    FILE* out = fopen(argv[3], "w");
    if (!out) return perror(argv[3]), 1;
    const uint32_t count = waste_tokenizer_token_count(tokenizer);
    fprintf(out, "# count %u bos %d eos %d\n", count, waste_tokenizer_bos(tokenizer), waste_tokenizer_eos(tokenizer));
    for (uint32_t id = 0; id < count; ++id) {
        const int32_t token = (int32_t)id;
        char* text = NULL;
        size_t length = 0;
        if (waste_tokenizer_detokenize(tokenizer, &token, 1, 0, &text, &length, &error) != WASTE_OK)
            return fail("detokenize", &error);
        char kind = 'n';
        if (length == 0) {
            /* plain mode leaves a special out; markup mode writes its text */
            waste_string_free(text);
            if (waste_tokenizer_detokenize(tokenizer, &token, 1, WASTE_TOKENIZE_MARKUP, &text, &length, &error) != WASTE_OK)
                return fail("detokenize", &error);
            kind = length > 0 && strlen(text) == length && waste_tokenizer_special_id(tokenizer, text) == token ? 's' : 'r';
        }
        fprintf(out, "%u\t%c\t", id, kind);
        for (size_t i = 0; i < length; ++i) fprintf(out, "%02x", (unsigned char)text[i]);
        fputc('\n', out);
        waste_string_free(text);
    }
    fclose(out);
    waste_tokenizer_free(tokenizer);
    if (model) waste_model_close(model);
    return 0;
}
