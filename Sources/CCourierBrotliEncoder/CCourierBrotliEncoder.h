#ifndef C_COURIER_BROTLI_ENCODER_H
#define C_COURIER_BROTLI_ENCODER_H

// The encoder, in a module of its own so that only the mock server (which compresses test bodies) links it.
#include <brotli/encode.h>

#endif
