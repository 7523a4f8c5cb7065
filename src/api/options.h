/* The version rule of the public options structs (include/omnigraph.h, "Options"), shared by
 * every call that takes one. Not part of the public contract. */
#ifndef OG_API_OPTIONS_H
#define OG_API_OPTIONS_H

/* 0 when `version` is one this library reads for the struct named `type`: 1 up to `current`
 * (a program built against an older header passes an older, shorter struct, and the call
 * reads only the fields that version has). Otherwise OG_E_BAD_REQUEST naming the struct. */
int api_options_check(int version, int current, const char *type);

#endif
