/* weft/export.h — symbol visibility and library version for libweft.
 * libweft is built with -fvisibility=hidden; WF_API marks what it exports. */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H

#if defined(__GNUC__)
#define WF_API __attribute__((visibility("default")))
#else
#define WF_API
#endif

#define WF_VERSION_MAJOR 0
#define WF_VERSION_MINOR 1
#define WF_VERSION_PATCH 0
#define WF_VERSION_STRING "0.1.0"

#endif /* WEFT_EXPORT_H */
