#include "util/status.h"

const char *util_status_string(util_status_t status)
{
    switch (status) {
#define UTIL_STATUS_TEXT_(_name, _value, _text)                                                    \
    case UTIL_##_name:                                                                             \
        return _text;
        UTIL_STATUS_LIST(UTIL_STATUS_TEXT_)
#undef UTIL_STATUS_TEXT_
    }
    return "unknown status";
}

const char *util_status_name(util_status_t status)
{
    switch (status) {
#define UTIL_STATUS_NAME_(_name, _value, _text)                                                    \
    case UTIL_##_name:                                                                             \
        return "UTIL_" #_name;
        UTIL_STATUS_LIST(UTIL_STATUS_NAME_)
#undef UTIL_STATUS_NAME_
    }
    return "UTIL_UNKNOWN";
}
