/* plugins/readers/csv/csv_scan.h — the csv reader's RFC 4180 scanner:
 * splits bytes in memory into rows and fields (quoted fields with
 * delimiters, doubled quotes and line breaks inside; LF or CRLF row ends)
 * and counts physical lines for messages. It knows nothing of columns or
 * types, and does not read files. */
#ifndef WF_READERS_CSV_SCAN_H
#define WF_READERS_CSV_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <weft/plugin_aux.h>

typedef struct csv_scanner {
  const char *data; /* the whole file, borrowed */
  size_t size;
  size_t pos;    /* offset of the next byte to scan */
  uint64_t line; /* 1-based physical line of data[pos] */
  char delim;    /* never '"', '\r' or '\n' */
  /* The last field scanned: unquoted, doubled quotes undone, and
   * NUL-terminated in buf (buf[len] == 0; owned, from wfx_host->alloc). */
  char *buf;
  size_t len, cap;
  int quoted;
} csv_scanner;

/* Results of csv_scan_field. */
#define CSV_FIELD_NEXT 1 /* a delimiter followed: the row has more fields */
#define CSV_FIELD_LAST 2 /* the row ended (line break or end of data) */
#define CSV_FIELD_BAD 3  /* malformed quoting: see why; the scanner has
                            moved to the next line (or the end) */

/* Sets up sc over data[0..size) (data may be NULL when size is 0). */
void csv_scan_init(csv_scanner *sc, const char *data, size_t size,
                   char delim);
void csv_scan_deinit(csv_scanner *sc);

/* Skips blank lines; 1 when a row starts at sc->pos, 0 at the end. */
int csv_scan_row_start(csv_scanner *sc);

/* Scans one field at sc->pos (the start of a row or just after a
 * delimiter). Returns CSV_FIELD_*, with *why a static description for
 * CSV_FIELD_BAD, or -WF_RESOURCE_EXHAUSTED with st set when the field
 * does not fit in memory. */
int csv_scan_field(csv_scanner *sc, const char **why, wf_status *st);

/* The 1-based physical line of offset pos (counts line feeds before it). */
uint64_t csv_scan_line_of(const csv_scanner *sc, size_t pos);

#endif
