#pragma once
#include <cstdio>
#define LOG_ERR(...) fprintf(stderr, __VA_ARGS__)
#define LOG_WRN(...) fprintf(stderr, __VA_ARGS__)
