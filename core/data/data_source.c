/* core/data/data_source.c — the file source stage: reads the files of a
 * dataset through their readers, one after the other or interleaved
 * (cycle_length files open, block_length records from each in turn),
 * checks every file's schema and every record against the dataset's, and
 * names the file in every error.
 *
 * It does not expand patterns or choose readers (core/data/dataset.c does, once,
 * when the dataset is described). */
#include <config.h>

#include <string.h>

#include "base/alloc.h"
#include "data/dataset.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

typedef struct slot {
  void *rd;     /* NULL: empty */
  int64_t file; /* index of the open file */
} slot;

typedef struct source_stage {
  wf__stage base;
  slot *slots;       /* the cycle */
  int nslots;
  int cur;           /* slot whose turn it is */
  int64_t in_block;  /* records taken from it in this turn */
  int64_t next_file; /* first file not opened yet in this pass */
} source_stage;

static const char *path_of(const source_stage *s, int64_t file) {
  return s->base.ds->u.files.paths[file];
}

static const wf__reader *reader_of(const source_stage *s, int64_t file) {
  return s->base.ds->u.files.readers[file];
}

static void close_slot(source_stage *s, slot *sl) {
  if (sl->rd)
    reader_of(s, sl->file)->def.close(sl->rd);
  sl->rd = NULL;
  sl->file = -1;
}

/* Checks an open file's schema against the dataset's (which came from the
 * first file). */
static int check_schema(source_stage *s, int64_t file, void *rd,
                        wf_status *st) {
  const wf_dataset *ds = s->base.ds;
  const wf__reader *r = reader_of(s, file);
  int32_t n = r->def.num_fields(rd);
  if (n != ds->nfields)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "%s: records have %d fields, those of %s have %d",
                         path_of(s, file), (int)n, ds->u.files.paths[0],
                         ds->nfields);
  for (int32_t i = 0; i < n; i++) {
    wf_reader_field f;
    char a[96], b[96];
    memset(&f, 0, sizeof f);
    f.struct_size = (uint32_t)sizeof f;
    f.abi_major = WF_ABI_MAJOR;
    f.abi_minor = WF_ABI_MINOR;
    f.shape.rank = WF_UNKNOWN_RANK;
    r->def.field(rd, i, &f);
    f.name[sizeof f.name - 1] = '\0';
    const wf__field *want = &ds->fields[i];
    if (strcmp(f.name, want->name) != 0 || f.dtype != (int32_t)want->dtype ||
        f.shape.rank < WF_UNKNOWN_RANK || f.shape.rank > WF_MAX_RANK ||
        !wf_shape_compatible(&f.shape, &want->shape))
      return wf_status_set(
          st, WF_INVALID_ARGUMENT,
          "%s: field %d is '%s' %s %s, but in %s it is '%s' %s %s",
          path_of(s, file), (int)i, f.name,
          wf_dtype_name((wf_dtype)f.dtype) ? wf_dtype_name((wf_dtype)f.dtype)
                                           : "?",
          f.shape.rank >= WF_UNKNOWN_RANK && f.shape.rank <= WF_MAX_RANK
              ? wf_shape_str(&f.shape, a, sizeof a)
              : "(bad shape)",
          ds->u.files.paths[0], want->name, wf_dtype_name(want->dtype),
          wf_shape_str(&want->shape, b, sizeof b));
  }
  return WF_OK;
}

/* Opens file into sl. Returns 0 or -code. */
static int open_slot(source_stage *s, slot *sl, int64_t file,
                     wf_status *st) {
  const wf_dataset *ds = s->base.ds;
  void *rd;
  int rc = wf__reader_open(reader_of(s, file), path_of(s, file),
                           ds->u.files.options, ds->u.files.nopts, &rd, st);
  if (rc)
    return rc;
  if (check_schema(s, file, rd, st)) {
    reader_of(s, file)->def.close(rd);
    return -wf_status_code(st);
  }
  sl->rd = rd;
  sl->file = file;
  return 0;
}

/* Checks a record's tensors against the dataset's fields. */
static int check_record(source_stage *s, int64_t file, wf_tensor **f,
                        wf_status *st) {
  const wf_dataset *ds = s->base.ds;
  for (int i = 0; i < ds->nfields; i++) {
    char a[96], b[96];
    if (!f[i])
      return wf_status_set(st, WF_INTERNAL,
                           "%s: reader '%s' returned a record without field "
                           "'%s'",
                           path_of(s, file), reader_of(s, file)->def.name,
                           ds->fields[i].name);
    if (f[i]->dtype != ds->fields[i].dtype ||
        !wf_shape_compatible(&f[i]->shape, &ds->fields[i].shape))
      return wf_status_set(st, WF_INTERNAL,
                           "%s: reader '%s' returned field '%s' as %s %s, "
                           "declared %s %s",
                           path_of(s, file), reader_of(s, file)->def.name,
                           ds->fields[i].name, wf_dtype_name(f[i]->dtype),
                           wf_shape_str(&f[i]->shape, a, sizeof a),
                           wf_dtype_name(ds->fields[i].dtype),
                           wf_shape_str(&ds->fields[i].shape, b, sizeof b));
  }
  return WF_OK;
}

static void advance(source_stage *s) {
  s->cur = (s->cur + 1) % s->nslots;
  s->in_block = 0;
}

static int source_next(wf__stage *base, wf_tensor **out, wf_status *st) {
  source_stage *s = (source_stage *)base;
  const wf_dataset *ds = base->ds;
  int64_t nfiles = ds->u.files.nfiles;
  wf_status rst = {WF_OK, NULL};

  for (;;) {
    int open = 0;
    for (int i = 0; i < s->nslots; i++)
      open += s->slots[i].rd != NULL;
    if (!open && s->next_file >= nfiles)
      return WF__END;
    slot *sl = &s->slots[s->cur];
    if (!sl->rd) {
      if (s->next_file >= nfiles) {
        advance(s);
        continue;
      }
      int64_t file = s->next_file++;
      int rc = open_slot(s, sl, file, st);
      /* A file its reader calls corrupt is a bad record of the source:
       * reading goes on with the next file. */
      if (rc)
        return rc;
    }
    const wf__reader *r = reader_of(s, sl->file);
    for (int i = 0; i < base->nfields; i++)
      out[i] = NULL;
    int got = r->def.next(sl->rd, out, &rst);
    if (got == WF_READER_RECORD) {
      if (check_record(s, sl->file, out, st)) {
        wf__element_clear(out, base->nfields);
        wf_status_reset(&rst);
        return -wf_status_code(st);
      }
      if (++s->in_block >= ds->u.files.block)
        advance(s);
      wf_status_reset(&rst);
      return WF__ELEMENT;
    }
    wf__element_clear(out, base->nfields); /* a reader may leave some */
    if (got == WF_READER_END) {
      close_slot(s, sl);
      advance(s);
      wf_status_reset(&rst);
      continue;
    }
    if (got > 0) {
      wf_status_set(&rst, WF_INTERNAL, "next returned %d", got);
      got = -WF_INTERNAL;
    } else if (got < 0 && wf_status_code(&rst) == WF_OK) {
      wf_status_set(&rst, (wf_code)(-got > WF_UNAUTHENTICATED ? WF_UNKNOWN
                                                              : -got),
                    "next failed without a message");
    }
    int rc = wf__reader_error(r, path_of(s, sl->file), got, &rst, st);
    wf_status_reset(&rst);
    return rc;
  }
}

static int source_reset(wf__stage *base, wf_status *st) {
  source_stage *s = (source_stage *)base;
  (void)st;
  for (int i = 0; i < s->nslots; i++)
    close_slot(s, &s->slots[i]);
  s->cur = 0;
  s->in_block = 0;
  s->next_file = 0;
  return WF_OK;
}

static int source_save(wf__stage *base, wf__wbuf *w, wf_status *st) {
  source_stage *s = (source_stage *)base;
  (void)st;
  wf__wbuf_u8(w, WF__DS_FILES);
  wf__wbuf_u64(w, (uint64_t)s->next_file);
  wf__wbuf_u32(w, (uint32_t)s->cur);
  wf__wbuf_u64(w, (uint64_t)s->in_block);
  wf__wbuf_u32(w, (uint32_t)s->nslots);
  for (int i = 0; i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    wf__wbuf_u64(w, (uint64_t)sl->file);
    wf__wbuf_u64(w, sl->rd ? reader_of(s, sl->file)->def.tell(sl->rd) : 0);
  }
  return WF_OK;
}

static int source_restore(wf__stage *base, wf__rbuf *r, wf_status *st) {
  source_stage *s = (source_stage *)base;
  const wf_dataset *ds = base->ds;
  uint64_t next_file, in_block;
  uint32_t cur, nslots;
  if (wf__rbuf_expect(r, WF__DS_FILES, st) ||
      wf__rbuf_u64(r, &next_file, "files done", st) ||
      wf__rbuf_u32(r, &cur, "file turn", st) ||
      wf__rbuf_u64(r, &in_block, "file block", st) ||
      wf__rbuf_u32(r, &nslots, "file cycle", st))
    return WF_INVALID_ARGUMENT;
  if (nslots != (uint32_t)s->nslots || cur >= nslots ||
      next_file > (uint64_t)ds->u.files.nfiles ||
      in_block >= (uint64_t)ds->u.files.block)
    return wf_status_set(st, WF_INVALID_ARGUMENT,
                         "iterator position: the file source state (file "
                         "%llu of %d, turn %u of %u) does not fit this "
                         "dataset",
                         (unsigned long long)next_file, ds->u.files.nfiles,
                         (unsigned)cur, (unsigned)nslots);
  s->next_file = (int64_t)next_file;
  s->cur = (int)cur;
  s->in_block = (int64_t)in_block;
  for (int i = 0; i < s->nslots; i++) {
    int64_t file;
    uint64_t token;
    if (wf__rbuf_i64(r, &file, "an open file", st) ||
        wf__rbuf_u64(r, &token, "an open file's position", st))
      return WF_INVALID_ARGUMENT;
    if (file == -1)
      continue;
    if (file < 0 || file >= s->next_file)
      return wf_status_set(st, WF_INVALID_ARGUMENT,
                           "iterator position: slot %d holds file %lld, "
                           "which is not among the %lld opened",
                           i, (long long)file, (long long)s->next_file);
    int rc = open_slot(s, &s->slots[i], file, st);
    if (rc)
      return -rc;
    wf_status rst = {WF_OK, NULL};
    const wf__reader *rdr = reader_of(s, file);
    rc = rdr->def.seek(s->slots[i].rd, token, &rst);
    if (rc) {
      wf__reader_error(rdr, path_of(s, file), rc > 0 ? -rc : rc, &rst, st);
      wf_status_prefix(st, "resuming at position %llu",
                       (unsigned long long)token);
      wf_status_reset(&rst);
      return wf_status_code(st);
    }
    wf_status_reset(&rst);
  }
  return WF_OK;
}

static void source_free(wf__stage *base) {
  source_stage *s = (source_stage *)base;
  for (int i = 0; s->slots && i < s->nslots; i++)
    close_slot(s, &s->slots[i]);
  wf__free(s->slots);
  wf__free(s);
}

static const wf__stage_ops source_ops = {source_next, source_reset,
                                         source_save, source_restore,
                                         source_free};

wf__stage *wf__source_stage_new(const wf_dataset *ds, wf_status *st) {
  source_stage *s = wf__calloc(1, sizeof *s);
  int n = ds->u.files.cycle;
  if (n > ds->u.files.nfiles)
    n = ds->u.files.nfiles;
  if (s)
    s->slots = wf__calloc((size_t)n, sizeof *s->slots);
  if (!s || !s->slots) {
    wf__free(s);
    wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                  "iterator: out of memory for the file source");
    return NULL;
  }
  s->base.ops = &source_ops;
  s->base.ds = ds;
  s->base.nfields = ds->nfields;
  s->nslots = n;
  for (int i = 0; i < n; i++)
    s->slots[i].file = -1;
  return &s->base;
}
