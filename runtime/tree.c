/* The canonical combine tree's shape (tree.h); schedule.c evaluates it. */
#include "tree.h"

uint32_t tree_split(uint32_t count)
{
    uint32_t p = 1;
    while (p < count - p) /* 2p < count, without overflow */
        p *= 2;
    return p;
}
