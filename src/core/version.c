/* Library version, from the public header's macros. */
#include "omnigraph.h"

const char *og_version(void)
{
    return OG_VERSION_STRING;
}

int og_version_number(void)
{
    return OG_VERSION_NUMBER;
}
