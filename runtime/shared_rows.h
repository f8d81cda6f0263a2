/* A table's parsed rows shared by the roles of one launch on one host (data.c). A launcher that
 * starts many roles on one machine names a folder in ALPHA_SHARED_ROWS_DIR (alpha run and
 * alpha-tui make one per launch, in /dev/shm when there is one, and remove it when the launch
 * ends). The first role to need the rows parses the CSV as always and writes what it parsed
 * there, under a name made of the CSV's SHA-256 and the layout the program reads it with; every
 * other role checks the CSV's digest as always and then maps those rows read-only instead of
 * parsing the file and holding its own copy. Without the variable, or when anything about the
 * folder or the file is not as it must be, a role parses and holds its own rows: sharing is a
 * saving, never a reason to refuse. */
#ifndef ALPHA_SHARED_ROWS_H
#define ALPHA_SHARED_ROWS_H

#include "alpha_program.h"
#include "data.h"

#define SHARED_ROWS_VARIABLE "ALPHA_SHARED_ROWS_DIR"

/* Whether the launch offers a folder for shared rows (ALPHA_SHARED_ROWS_DIR is set). */
int shared_rows_offered(void);
/* 1 and d's arrays pointing into a read-only mapping of the rows another role of the launch
 * parsed from the CSV whose SHA-256 is p->data_sha256; 0 when there is none (or no folder). */
int shared_rows_find(const struct alpha_program *p, struct dataset *d);
/* Offers the rows this role parsed (d's arrays, from calloc) to the others: written beside the
 * name and renamed to it; then d points into the mapping and its own arrays are freed. Leaves
 * d as it is when the rows cannot be shared. */
void shared_rows_offer(const struct alpha_program *p, struct dataset *d);

#endif
