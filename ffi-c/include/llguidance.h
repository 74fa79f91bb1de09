/*
 * llguidance.h: the name LLGuidance's clients include (`#include "llguidance.h"` or
 * `<llguidance.h>` in llama.cpp's common/llguidance.cpp, onnxruntime-genai's constrained
 * logits processor, LiteRT-LM). It declares sieve's LLGuidance-compatible layer, so those
 * sources compile unchanged against sieve and link libsieve; the API, its error model and
 * the documented differences from LLGuidance are in llguidance_compat.h.
 *
 * Like LLGuidance's generated header, it is guarded by LLGUIDANCE_H and brings in
 * <stdarg.h>, <stdbool.h>, <stddef.h>, <stdint.h> and <stdlib.h>, which some clients rely on
 * without including them themselves.
 */
#ifndef LLGUIDANCE_H
#define LLGUIDANCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "llguidance_compat.h"

#endif /* LLGUIDANCE_H */
