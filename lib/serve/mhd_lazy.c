/* lib/serve/mhd_lazy.c — libmicrohttpd opened on first use (mhd_lazy.h).
 * Each wrapper opens the library once and calls through the address found
 * then; when it cannot be opened, each returns what the library returns
 * for a failure (NULL, MHD_NO, MHD_INVALID_SOCKET) and srv_mhd_ready says
 * why. The variadic MHD_start_daemon goes through MHD_start_daemon_va;
 * the two info getters are called by the server with no argument after
 * the info type, and are passed on so. */
#include <config.h>

#include "mhd_lazy.h"

#include "lazylib.h"

#define SRV_MHD_FUNCS(X)                                                       \
  X(MHD_add_response_header)                                                   \
  X(MHD_create_response_from_buffer)                                           \
  X(MHD_destroy_response)                                                      \
  X(MHD_get_connection_info)                                                   \
  X(MHD_get_daemon_info)                                                       \
  X(MHD_lookup_connection_value)                                               \
  X(MHD_queue_response)                                                        \
  X(MHD_quiesce_daemon)                                                        \
  X(MHD_start_daemon_va)                                                       \
  X(MHD_stop_daemon)

/* Every wrapped name is renamed by mhd_lazy.h (MHD_start_daemon_va is
 * looked up, not called by the server). */
#define SRV_RENAMED(n)                                                         \
  _Static_assert(sizeof LAZYLIB_STR(n) == sizeof "srv_lz_" #n,                 \
                 #n " is not renamed in mhd_lazy.h");
SRV_RENAMED(MHD_add_response_header)
SRV_RENAMED(MHD_create_response_from_buffer)
SRV_RENAMED(MHD_destroy_response)
SRV_RENAMED(MHD_get_connection_info)
SRV_RENAMED(MHD_get_daemon_info)
SRV_RENAMED(MHD_lookup_connection_value)
SRV_RENAMED(MHD_queue_response)
SRV_RENAMED(MHD_quiesce_daemon)
SRV_RENAMED(MHD_start_daemon)
SRV_RENAMED(MHD_stop_daemon)

#define SRV_INDEX(n) I_##n,
enum { SRV_MHD_FUNCS(SRV_INDEX) I_COUNT };
#undef SRV_INDEX

#define SRV_NAME(n) #n,
static const char *const mhd_symbols[] = {SRV_MHD_FUNCS(SRV_NAME) NULL};
#undef SRV_NAME

static void *mhd_addrs[I_COUNT];

static lazylib mhd_lib = LAZYLIB_INIT(
    .user = "the server", .what = "libmicrohttpd",
    .soname = "libmicrohttpd.so.12", .env = "WEFT_MICROHTTPD_LIBRARY",
    .symbols = mhd_symbols, .addrs = mhd_addrs);

/* The library's own function n, as its type in <microhttpd.h> (which
 * declares it under the srv_lz_ name). */
#define REAL(n) ((__typeof__(&srv_lz_##n))mhd_addrs[I_##n])

int srv_mhd_ready(wf_status *st) {
  if (!lazylib_open(&mhd_lib))
    return 0;
  return wf_status_set(st, WF_UNAVAILABLE, "%s", lazylib_error(&mhd_lib));
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response,
                                        const char *header,
                                        const char *content) {
  if (lazylib_open(&mhd_lib))
    return MHD_NO;
  return REAL(MHD_add_response_header)(response, header, content);
}

struct MHD_Response *
MHD_create_response_from_buffer(size_t size, void *buffer,
                                enum MHD_ResponseMemoryMode mode) {
  if (lazylib_open(&mhd_lib))
    return NULL;
  return REAL(MHD_create_response_from_buffer)(size, buffer, mode);
}

void MHD_destroy_response(struct MHD_Response *response) {
  if (!lazylib_open(&mhd_lib))
    REAL(MHD_destroy_response)(response);
}

const union MHD_ConnectionInfo *
MHD_get_connection_info(struct MHD_Connection *connection,
                        enum MHD_ConnectionInfoType info_type, ...) {
  if (lazylib_open(&mhd_lib))
    return NULL;
  return REAL(MHD_get_connection_info)(connection, info_type);
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType
                                                    info_type,
                                                ...) {
  if (lazylib_open(&mhd_lib))
    return NULL;
  return REAL(MHD_get_daemon_info)(daemon, info_type);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection,
                                        enum MHD_ValueKind kind,
                                        const char *key) {
  if (lazylib_open(&mhd_lib))
    return NULL;
  return REAL(MHD_lookup_connection_value)(connection, kind, key);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection,
                                   unsigned int status_code,
                                   struct MHD_Response *response) {
  if (lazylib_open(&mhd_lib))
    return MHD_NO;
  return REAL(MHD_queue_response)(connection, status_code, response);
}

MHD_socket MHD_quiesce_daemon(struct MHD_Daemon *daemon) {
  if (lazylib_open(&mhd_lib))
    return MHD_INVALID_SOCKET;
  return REAL(MHD_quiesce_daemon)(daemon);
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc,
                                    void *apc_cls,
                                    MHD_AccessHandlerCallback dh,
                                    void *dh_cls, ...) {
  struct MHD_Daemon *d;
  va_list ap;

  if (lazylib_open(&mhd_lib))
    return NULL;
  va_start(ap, dh_cls);
  d = ((struct MHD_Daemon * (*)(unsigned int, uint16_t,
                                MHD_AcceptPolicyCallback, void *,
                                MHD_AccessHandlerCallback, void *,
                                va_list)) mhd_addrs[I_MHD_start_daemon_va])(
      flags, port, apc, apc_cls, dh, dh_cls, ap);
  va_end(ap);
  return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon) {
  if (!lazylib_open(&mhd_lib))
    REAL(MHD_stop_daemon)(daemon);
}
