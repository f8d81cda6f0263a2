/* The layout of a capture (manifest.h): kind and file names, the manifest's text, finding the
 * capture a path names. Shared by the writer (checkpoint.c) and the reader (resume.c). */
#define _POSIX_C_SOURCE 200809L
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "files.h"
#include "refusal.h"

void checkpoint_kind(const struct alpha_program *p, uint32_t slot, char out[48])
{
    static const char *const adam[] = {"m", "v"};
    if (slot == p->state_slots)
        snprintf(out, 48, "%.32s.scalars", p->learner);
    else if (strcmp(p->learner, "adam") == 0 && slot < 2)
        snprintf(out, 48, "adam.%s", adam[slot]);
    else if (strcmp(p->learner, "momentum") == 0 && slot == 0)
        snprintf(out, 48, "momentum.v");
    else
        snprintf(out, 48, "%.32s.s%u", p->learner, (unsigned)slot);
}

int checkpoint_kind_of(const struct alpha_program *p, const char *name, uint32_t *kind)
{
    char k[48];
    if (strcmp(name, "params") == 0)
        return *kind = 0, 1;
    for (uint32_t slot = 0; slot <= p->state_slots; slot++) {
        checkpoint_kind(p, slot, k);
        if (strcmp(name, k) == 0 && (slot < p->state_slots || p->state_scalars))
            return *kind = 1 + slot, 1;
    }
    return 0;
}

void checkpoint_shard_name(const char *kind, const char *tensor, uint64_t start, uint64_t count,
                           char out[240])
{
    if (*tensor)
        snprintf(out, 240, "%.47s/%.160s.%llu-%llu", kind, tensor, (unsigned long long)start,
                 (unsigned long long)(start + count));
    else
        snprintf(out, 240, "%.47s", kind);
}

void checkpoint_role_file(const char *role, char out[128])
{
    size_t n = 0;
    for (const char *s = role; *s && n < 127; s++)
        if (*s != ']')
            out[n++] = *s == '[' ? '-' : *s;
    out[n] = '\0';
}

/* The manifest's fields (docs/runtime.md); `top` adds what the whole capture needs. */
char *manifest_text(const struct capture *c, int top, float loss, size_t *size)
{
    const struct alpha_program *p = c->p;
    char *text = NULL;
    FILE *f = open_memstream(&text, size);
    if (!f)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot build a manifest");
    fprintf(f, "{\n  \"format\": \"%s\",\n  \"system\": ",
            top ? CHECKPOINT_FORMAT : CHECKPOINT_PART_FORMAT);
    json_string(f, p->system);
    fprintf(f, ",\n  \"identity\": ");
    json_string(f, p->identity);
    fprintf(f, ",\n  \"round\": %u,\n  \"role\": ", (unsigned)c->round);
    json_string(f, c->r->name);
    if (top) {
        uint32_t bits;
        memcpy(&bits, &loss, sizeof bits);
        fprintf(f, ",\n  \"n_params\": %llu,\n  \"learner\": ", (unsigned long long)p->n_params);
        json_string(f, p->learner);
        if (p->arithmetic && strcmp(p->arithmetic, "unfused") != 0) {
            /* an unfused capture keeps the bytes it always had: no field means unfused */
            fprintf(f, ",\n  \"arithmetic\": ");
            json_string(f, p->arithmetic);
        }
        fprintf(f, ",\n  \"state_slots\": %u,\n  \"state_scalars\": %u,\n  \"loss_bits\": "
                "\"%08x\",\n  \"tensors\": [", (unsigned)p->state_slots,
                (unsigned)p->state_scalars, (unsigned)bits);
        for (uint32_t i = 0; i < p->n_tensors; i++) {
            fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
            json_string(f, p->tensors[i].name);
            fprintf(f, ", \"offset\": %llu, \"count\": %llu}",
                    (unsigned long long)p->tensors[i].offset,
                    (unsigned long long)p->tensors[i].count);
        }
        fprintf(f, "\n  ]");
    }
    fprintf(f, ",\n  \"shards\": [");
    for (uint32_t i = 0; i < c->n_shards; i++) {
        const struct shard_entry *s = &c->shards[i];
        fprintf(f, "%s\n    {\"kind\": ", i ? "," : "");
        json_string(f, s->kind);
        fprintf(f, ", \"tensor\": ");
        json_string(f, s->tensor);
        fprintf(f, ", \"start\": %llu, \"count\": %llu, \"offset\": %llu, \"length\": %llu, "
                "\"sha256\": \"%s\"}", (unsigned long long)s->start, (unsigned long long)s->count,
                (unsigned long long)s->offset, (unsigned long long)(4 * s->count), s->sha256);
    }
    fprintf(f, "%s],\n  \"children\": [", c->n_shards ? "\n  " : "");
    for (uint32_t i = 0; i < c->n_children; i++) {
        fprintf(f, "%s\n    {\"role\": ", i ? "," : "");
        json_string(f, c->children[i].role);
        fprintf(f, ", \"file\": ");
        json_string(f, c->children[i].file);
        fprintf(f, ", \"sha256\": \"%s\"}", c->children[i].sha256);
    }
    fprintf(f, "%s]\n}\n", c->n_children ? "\n  " : "");
    if (fclose(f) != 0 || !text)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot build a manifest");
    return text;
}

/* A relative file name inside the capture: no absolute path, no "..". */
int manifest_safe_name(const char *name)
{
    if (!*name || *name == '/' || strlen(name) > 200)
        return 0;
    for (const char *s = name; *s; s = strchr(s, '/') ? strchr(s, '/') + 1 : s + strlen(s))
        if (strncmp(s, "..", 2) == 0 && (s[2] == '/' || s[2] == '\0'))
            return 0;
    return 1;
}

int manifest_published(const char *name, uint64_t *round)
{
    size_t n = strlen(name);
    if (n < 7 || n > 26 || strncmp(name, "round-", 6) != 0 || strspn(name + 6, "0123456789") != n - 6)
        return 0;
    *round = strtoull(name + 6, NULL, 10);
    return 1;
}

void manifest_locate(const char *path, char out[4096])
{
    char top[4400];
    snprintf(top, sizeof top, "%s/%s", path, CHECKPOINT_TOP);
    if (strlen(path) >= 4000)
        refuse(REFUSAL_CHECKPOINT_INCOMPLETE, "checkpoint path %.64s... is too long", path);
    if (files_exist(top)) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (strstr(base, ".partial-"))
            refuse(REFUSAL_CHECKPOINT_INCOMPLETE, "capture %s is not published: its writing "
                   "never finished, or has not yet", path);
        snprintf(out, 4096, "%s", path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        refuse(REFUSAL_CHECKPOINT_INCOMPLETE, "no checkpoint at %s: %s", path, strerror(errno));
    uint64_t best = 0, round;
    char name[32] = "";
    int partial = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (manifest_published(e->d_name, &round) &&
            (!*name || round > best || (round == best && strcmp(e->d_name, name) > 0)))
            best = round, snprintf(name, sizeof name, "%.26s", e->d_name);
        partial |= strncmp(e->d_name, "round-", 6) == 0 && strstr(e->d_name, ".partial-");
    }
    closedir(d);
    if (!*name)
        refuse(REFUSAL_CHECKPOINT_INCOMPLETE, "no published capture at %s (no %s, no round-<R> "
               "folder%s)", path, CHECKPOINT_TOP, partial ? "; only unpublished ones" : "");
    snprintf(out, 4096, "%s/%s", path, name);
}
