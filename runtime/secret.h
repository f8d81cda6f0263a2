/* The launch secret: 32 bytes that every role of one launch shares and nobody else knows. The
 * launcher draws a fresh one per launch; a role reads it at start-up, keeps it until its links
 * are open (the handshake's proofs and the per-link keys come from it), then wipes it. It is
 * never compiled in and never on the command line: it comes from a file (the executable's
 * --secret-file PATH, or the path `alpha build --secret-file` compiled in) or from an inherited
 * descriptor named by ALPHA_SECRET_FD. */
#ifndef ALPHA_SECRET_H
#define ALPHA_SECRET_H

#include <stdint.h>

#define SECRET_BYTES 32u

/* The secret for a role with links: from flag_path when given, else from the descriptor in
 * ALPHA_SECRET_FD when set, else from built_path when not empty. Refuses secret-missing (no
 * source, or the file does not exist) or secret-unreadable (cannot be read, not a regular file
 * or pipe, not exactly 32 bytes, or a file that its group or others may access). */
void secret_load(const char *flag_path, const char *built_path, uint8_t out[SECRET_BYTES]);

/* n fresh random bytes from the kernel (a handshake nonce); refuses peer-unauthenticated when
 * the kernel gives none, since a handshake without a fresh nonce could be replayed. */
void secret_random(uint8_t *out, uint32_t n);

#endif
