#ifndef C_COURIER_ZLIB_H
#define C_COURIER_ZLIB_H

#include <zlib.h>

// zlib's init functions are macros (they pass the library version and the stream size), which Swift cannot call.

static inline int CCourierZlib_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

static inline int CCourierZlib_deflateInit2(z_streamp stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

#endif
