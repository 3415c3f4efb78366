/* lib/serve/mhd_lazy.h — the names under which the server calls
 * libmicrohttpd: each function it uses is renamed to its srv_lz_ wrapper
 * (mhd_lazy.c), which opens the library on first use and calls through
 * (plugins/common/lazylib.h). So `weft` does not link libmicrohttpd and
 * the GnuTLS stack behind it, and every command but `weft serve` starts
 * without mapping them (1.5 ms of each start on a 2-core Xeon).
 *
 * Included instead of <microhttpd.h> by the server's files. */
#ifndef WF_SERVE_MHD_LAZY_H
#define WF_SERVE_MHD_LAZY_H

#define MHD_add_response_header srv_lz_MHD_add_response_header
#define MHD_create_response_from_buffer srv_lz_MHD_create_response_from_buffer
#define MHD_destroy_response srv_lz_MHD_destroy_response
#define MHD_get_connection_info srv_lz_MHD_get_connection_info
#define MHD_get_daemon_info srv_lz_MHD_get_daemon_info
#define MHD_lookup_connection_value srv_lz_MHD_lookup_connection_value
#define MHD_queue_response srv_lz_MHD_queue_response
#define MHD_quiesce_daemon srv_lz_MHD_quiesce_daemon
#define MHD_start_daemon srv_lz_MHD_start_daemon
#define MHD_stop_daemon srv_lz_MHD_stop_daemon

#include <microhttpd.h>

#include <weft/weft.h>

/* 0 once libmicrohttpd is open; otherwise UNAVAILABLE in st naming the
 * library, why it could not be opened and the variable that names another
 * file (WEFT_MICROHTTPD_LIBRARY). Asked before the first daemon starts:
 * the wrappers themselves can only return NULL or MHD_NO. */
int srv_mhd_ready(wf_status *st);

#endif
