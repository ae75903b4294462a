#ifndef C_COURIER_BROTLI_H
#define C_COURIER_BROTLI_H

// Only the decoder: the Courier library decodes `br` bodies and never compresses anything.
#include <brotli/decode.h>

#endif
