/* The C API used as a C program would (docs/c-api.md): run by tests/c_program.rs,
 * under valgrind where it is installed. Usage: link OUT.ptx INPUT.ptx...
 * Links the inputs for sm_80 into OUT.ptx, then checks the error paths. Exit 0 when
 * every check holds; each failed check is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptxld.h"

static int failures = 0;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                 \
            fputc('\n', stderr);                          \
            failures++;                                   \
        }                                                 \
    } while (0)

/* The diagnostics of `h` (text or JSON), malloc'ed. */
static char *diagnostics(PtxldHandle *h, int json) {
    size_t size = 0;
    CHECK(ptxld_get_diagnostics_size(h, json, &size) == PTXLD_RESULT_SUCCESS, "diagnostics size");
    char *text = malloc(size);
    CHECK(ptxld_get_diagnostics(h, json, text) == PTXLD_RESULT_SUCCESS, "diagnostics");
    CHECK(strlen(text) + 1 == size, "diagnostics are %zu bytes and a NUL", size - 1);
    return text;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(*size ? *size : 1);
    if (fread(data, 1, *size, f) != *size) *size = 0;
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT.ptx INPUT.ptx...\n", argv[0]);
        return 2;
    }
    unsigned major = 9, minor = 9, patch = 9;
    ptxld_version(&major, &minor, &patch);
    CHECK(major == 0 && minor == 1, "version %u.%u.%u", major, minor, patch);

    /* A link of the inputs: files, the first also as bytes under another name. */
    const char *options[] = {"--arch=sm_80", "-O3"};
    PtxldHandle *h = NULL;
    CHECK(ptxld_create(&h, 2, options) == PTXLD_RESULT_SUCCESS, "create");
    size_t size = 0;
    CHECK(ptxld_get_output_size(h, &size) == PTXLD_RESULT_NOT_COMPLETE, "no output before complete");
    for (int i = 2; i < argc; i++)
        CHECK(ptxld_add_file(h, argv[i]) == PTXLD_RESULT_SUCCESS, "add_file %s", argv[i]);
    PtxldResult r = ptxld_complete(h);
    if (r != PTXLD_RESULT_SUCCESS) {
        char *why = diagnostics(h, 0);
        CHECK(0, "complete: %s\n%s", ptxld_result_string(r), why);
        free(why);
    }
    CHECK(ptxld_get_output_size(h, &size) == PTXLD_RESULT_SUCCESS && size > 0, "output size");
    char *out = malloc(size);
    CHECK(ptxld_get_output(h, out) == PTXLD_RESULT_SUCCESS, "output");
    FILE *f = fopen(argv[1], "wb");
    CHECK(f && fwrite(out, 1, size, f) == size, "writing %s", argv[1]);
    if (f) fclose(f);
    CHECK(ptxld_add_file(h, argv[2]) == PTXLD_RESULT_NOT_COMPLETE, "no input after complete");
    free(out);
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS && h == NULL, "destroy");

    /* A duplicate definition: the first input twice, as bytes. */
    size_t n = 0;
    char *data = read_file(argv[2], &n);
    CHECK(data && n > 0, "reading %s", argv[2]);
    CHECK(ptxld_create(&h, 0, NULL) == PTXLD_RESULT_SUCCESS, "create without options");
    CHECK(ptxld_add_data(h, data, n, "one.ptx") == PTXLD_RESULT_SUCCESS, "add_data");
    CHECK(ptxld_add_data(h, data, n, "two.ptx") == PTXLD_RESULT_SUCCESS, "add_data");
    CHECK(ptxld_complete(h) == PTXLD_RESULT_LINK, "a duplicate fails the link");
    CHECK(ptxld_get_output_size(h, &size) == PTXLD_RESULT_NOT_COMPLETE, "no output after a failure");
    char *text = diagnostics(h, 0);
    CHECK(strstr(text, "error: duplicate symbol: ") && strstr(text, ">>> defined at one.ptx:") &&
              strstr(text, ">>> defined at two.ptx:"),
          "text diagnostics: %s", text);
    char *json = diagnostics(h, 1);
    const char *want = "{\"version\":1,\"ok\":false,\"diagnostics\":[{\"severity\":\"error\","
                       "\"code\":\"duplicate-symbol\"";
    CHECK(strncmp(json, want, strlen(want)) == 0, "JSON diagnostics: %s", json);
    free(text);
    free(json);
    free(data);
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS, "destroy");

    /* A refused option: a handle that says why, and can only be destroyed. */
    const char *bad[] = {"--no-such-option"};
    CHECK(ptxld_create(&h, 1, bad) == PTXLD_RESULT_INVALID_OPTION && h != NULL, "a bad option");
    text = diagnostics(h, 0);
    CHECK(strstr(text, "--no-such-option") != NULL, "says which option: %s", text);
    free(text);
    CHECK(ptxld_add_file(h, argv[2]) == PTXLD_RESULT_INVALID_OPTION, "no input to a refused handle");
    CHECK(ptxld_complete(h) == PTXLD_RESULT_INVALID_OPTION, "no link of a refused handle");
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS, "destroy");
    const char *input[] = {"a.ptx"};
    CHECK(ptxld_create(&h, 1, input) == PTXLD_RESULT_INVALID_OPTION, "an input as an option");
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS, "destroy");

    /* A missing file, null pointers. */
    CHECK(ptxld_create(&h, 0, NULL) == PTXLD_RESULT_SUCCESS, "create");
    CHECK(ptxld_add_file(h, "/nonexistent-ptxld/x.ptx") == PTXLD_RESULT_INPUT, "a missing file");
    text = diagnostics(h, 0);
    CHECK(strstr(text, "cannot read /nonexistent-ptxld/x.ptx") != NULL, "says which file: %s", text);
    free(text);
    CHECK(ptxld_add_file(h, NULL) == PTXLD_RESULT_INVALID_ARGUMENT, "a null path");
    CHECK(ptxld_add_data(h, NULL, 4, "x") == PTXLD_RESULT_INVALID_ARGUMENT, "null data");
    CHECK(ptxld_get_output_size(NULL, &size) == PTXLD_RESULT_INVALID_ARGUMENT, "a null handle");
    CHECK(ptxld_create(NULL, 0, NULL) == PTXLD_RESULT_INVALID_ARGUMENT, "a null handle pointer");
    CHECK(strcmp(ptxld_result_string(PTXLD_RESULT_LINK), "PTXLD_RESULT_LINK") == 0, "result names");
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS, "destroy");
    CHECK(ptxld_destroy(&h) == PTXLD_RESULT_SUCCESS, "destroying a null handle");

    if (failures == 0) printf("c api: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
