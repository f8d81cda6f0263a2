/* The contract between the runtime and what `alpha build` generates for one role.
 *
 * The compiler emits two things per executable:
 *   - kernels.o (LLVM, via llvmlite): the functions declared below, with the arithmetic of the
 *     system fixed by the compiler (no contraction, no libm);
 *   - program.c: one constant `ALPHA_PROGRAM` describing the system, its data and its layout.
 * The runtime owns everything else: data loading and its digest, batch selection, the canonical
 * combine tree, events, the parameter file.
 */
#ifndef ALPHA_PROGRAM_H
#define ALPHA_PROGRAM_H

#include <stdint.h>

enum alpha_label_kind { ALPHA_LABEL_CLASS = 0, ALPHA_LABEL_REGRESSION = 1 };
enum alpha_data_kind { ALPHA_DATA_CSV = 0, ALPHA_DATA_EMBEDDED = 1 };
/* A data file's format (data_kind CSV: the executable reads a file). */
enum alpha_data_format {
    ALPHA_FORMAT_CSV = 0,    /* decimal text, one row a line */
    ALPHA_FORMAT_NPY = 1,    /* two .npy files: features, labels */
    ALPHA_FORMAT_NPZ = 2,    /* one .npz: arrays x_key and y_key */
    ALPHA_FORMAT_TOKENS = 3, /* a flat file of tokens cut into windows of `features` */
};

struct alpha_tensor {
    const char *name;      /* parameter name as declared */
    uint64_t offset;       /* first float in the flat parameter array */
    uint64_t count;        /* number of floats */
};

struct alpha_program {
    const char *system;          /* system name */
    const char *identity;        /* SHA-256 hex of the canonical system text */
    uint64_t n_params;           /* floats in the flat parameter (and gradient) array */
    uint64_t n_state;            /* floats of learner state (momentum, adam m and v, ...) */
    uint32_t batch;              /* examples per round */
    uint32_t leaves;             /* leaves per round; batch = leaves * leaf_size */
    uint32_t leaf_size;
    uint32_t steps;              /* rounds to run */
    uint32_t features;           /* floats per example */
    uint32_t outputs;            /* model outputs per example (classes, or regression width) */
    uint32_t label_kind;         /* enum alpha_label_kind */
    uint32_t shuffle;            /* 0: example g of the run is row g mod train_rows; 1: permuted */
    uint64_t shuffle_seed;
    uint32_t data_kind;          /* enum alpha_data_kind */
    const char *data_path;       /* CSV path compiled in (a deployment input) */
    const char *data_sha256;     /* SHA-256 hex of the CSV file bytes, or of the embedded bytes */
    uint32_t rows;               /* all rows; the last `holdout` rows are held out */
    uint32_t holdout;
    const float *embedded_x;     /* rows * features, when data_kind == EMBEDDED */
    const float *embedded_y;     /* rows * (1 or outputs): class index as float, or targets */
    uint32_t n_tensors;
    const struct alpha_tensor *tensors;
    uint32_t state_slots;        /* learner state arrays per element: sgd 0, momentum 1, adam 2 */
    uint32_t state_scalars;      /* learner scalars after them: adam's beta powers, 2 */
    const char *learner;         /* "sgd", "momentum", "adam" */
    uint64_t data_size;          /* bytes of the CSV file the digest is of; 0: not compiled in
                                  * (a hand-written program), only the digest decides */
    uint32_t label_positions;    /* class kind: labels per row (a sequence task's answer
                                  * positions), the model giving `outputs` floats for each;
                                  * 0 or 1: one label per row */
    uint32_t vocabulary;         /* CSV kind: 0, or the token count of a table of token
                                  * columns: every feature an integral value in 0 … vocabulary-1 */
    /* How a data file (data_kind CSV) is read; all zero: a headerless CSV, labels last. */
    uint32_t data_format;        /* enum alpha_data_format */
    uint32_t csv_header;         /* CSV: 1 when the first line that is not blank is a header */
    uint32_t label_column;       /* CSV: 1 + the first label column; 0: the last columns */
    const char *label_name;      /* CSV with a header: the first label column's name, or NULL */
    const char *labels_path;     /* NPY: the labels file (data_path holds the features) */
    const char *labels_sha256;   /* NPY: SHA-256 hex of the labels file bytes */
    uint64_t labels_size;        /* NPY: the labels file's bytes */
    const char *x_key;           /* NPZ: the features' array (member x_key.npy) */
    const char *y_key;           /* NPZ: the labels' array */
    uint32_t token_bytes;        /* TOKENS: 2 (uint16) or 4 (uint32) */
    const char *arithmetic;      /* "unfused" or "fused": how a sum of products adds a term;
                                  * a capture names it (a fused one only) and a resume checks */
};

extern const struct alpha_program ALPHA_PROGRAM;

/* ---- the role: what this executable does in a run of several cooperating executables ----
 *
 * A role holds a projected schedule: the ops it runs, in order, every round. Values travel as
 * pieces: a piece is the sum of the gradients of the canonical-tree node [lo, hi) (leaves lo to
 * hi-1), followed by one more float, the sum of the same leaves' losses. A role keeps the pieces
 * it computed or received in a table keyed by (lo, hi) for the current round.
 *
 * The canonical tree over `leaves` leaves: node [lo, hi) with hi - lo > 1 has children [lo, mid)
 * and [mid, hi), mid = lo + the largest power of two strictly below hi - lo; a node's value is
 * left + right, elementwise float32, the left operand first. A single-process build is the role
 * "main" with the schedule COMPUTE 0 L; COMBINE 0 L; APPLY, and no links.
 */
enum alpha_op_kind {
    ALPHA_OP_COMPUTE = 1, /* leaves [a, b): compute each leaf's gradient, keep it as piece [l, l+1) */
    ALPHA_OP_COMBINE = 2, /* node [a, b): evaluate it from the pieces held, recursively by the
                           * canonical tree (a held piece is used as it is), keep it as a piece;
                           * every addition performed is reported in the step event */
    ALPHA_OP_SEND = 3,    /* send held piece [a, b) on link `link` */
    ALPHA_OP_RECV = 4,    /* receive piece [a, b) on link `link`; any other node is refused */
    ALPHA_OP_APPLY = 5,   /* piece [0, leaves) is the round's gradient: apply the learner to
                           * elements [start, start+count) (count 0: all); the round's update
                           * is staged and committed only when the whole round succeeded */
    ALPHA_OP_SEND_PARAMS = 6, /* send parameter elements [start, start+count) on `link` */
    ALPHA_OP_RECV_PARAMS = 7, /* receive parameter elements [start, start+count) on `link` */
    ALPHA_OP_CHECKPOINT = 8,  /* checkpoint rounds only: write this role's shards, `flags` */
    ALPHA_OP_ACK_RECV = 9,    /* checkpoint rounds only: a child's capture acknowledgement */
    ALPHA_OP_ACK_SEND = 10,   /* checkpoint rounds only: acknowledge the capture to the parent */
    ALPHA_OP_PUBLISH = 11,    /* checkpoint rounds only: the root publishes the capture */
    ALPHA_OP_NORM_SEND = 12,  /* clipping: send the gradient-norm nodes covering elements
                               * [start, start+count) on `link` (clip_norm.c) */
    ALPHA_OP_NORM_RECV = 13,  /* clipping: receive them */
};

enum alpha_checkpoint_flags {
    ALPHA_WRITES_PARAMS = 1,    /* parameter elements [start, start+count) */
    ALPHA_WRITES_OPTIMIZER = 2, /* learner state of elements [start, start+count) */
    ALPHA_WRITES_SCALARS = 4,   /* the learner's scalars (adam's beta powers) */
};

struct alpha_op {
    uint32_t kind; /* enum alpha_op_kind */
    uint32_t link; /* index into alpha_role.links (SEND, RECV, *_PARAMS, ACK_*) */
    uint32_t a, b; /* a canonical-tree node [a, b) */
    uint64_t start, count; /* an element range of the flat parameters (count 0: all, or none) */
    uint32_t flags;        /* CHECKPOINT: enum alpha_checkpoint_flags */
};

struct alpha_link {
    uint32_t peer;         /* the peer's role index in the membership */
    const char *peer_name; /* e.g. "worker[3]" */
    uint32_t accept;       /* 1: this role listens and the peer connects; 0: this role connects */
    const char *host;      /* the peer's address when connecting (a deployment input) */
    uint32_t port;         /* the peer's port when connecting */
};

struct alpha_role {
    uint32_t index;        /* this role's index in the membership (0 .. n_roles-1) */
    const char *name;      /* e.g. "worker[3]", "hub", "main" */
    uint32_t n_roles;      /* size of the membership */
    uint32_t epoch;        /* membership epoch */
    const char *plan;      /* plan name ("" for a single-process build) */
    const char *plan_identity; /* SHA-256 hex of the canonical system and plan */
    const char *listen_host;   /* where this role listens (when any link accepts) */
    uint32_t listen_port;
    uint32_t connect_timeout_ms; /* deadline for every connection and for the handshake */
    uint32_t io_timeout_ms;      /* deadline for every frame once running */
    uint32_t n_ops;
    const struct alpha_op *ops;
    uint32_t n_links;
    const struct alpha_link *links;
    uint32_t writes_params; /* 1: this role writes the final parameter file and evaluates */
    uint32_t checkpoint_every; /* rounds between captures (and one at the end); 0: none */
    const char *checkpoint_dir; /* where captures are written (a deployment input) */
    const char *resume;         /* a checkpoint or capture folder to resume from (a deployment
                                 * input); "" for a fresh start */
    uint32_t checkpoint_keep;   /* published captures the root keeps (a deployment input); 0:
                                 * every one */
    uint64_t state_start, state_count; /* the elements whose learner state this role holds
                                        * (count 0: all of them) */
    const char *secret_file; /* where the launch secret is (a deployment input: a path, never
                              * the secret); NULL or "": none compiled in */
    uint32_t threads; /* threads for the kernels' tasks (a deployment input); 0: the cores the
                       * process may run on. Never changes the bits (pool.h) */
    uint32_t max_threads; /* the most threads the role's pairing admits (`cores N`); 0: any */
};

/* The role: ALPHA_ROLE where the build compiled it in (a single process), else decoded once
 * from the role table a plan's build wrote into this executable (role_table.c). Read it through
 * alpha_role(), which refuses program-invalid when neither is whole. */
extern const struct alpha_role ALPHA_ROLE __attribute__((weak));
extern const uint8_t alpha_role_table[] __attribute__((weak));
extern const uint64_t alpha_role_table_bytes __attribute__((weak));
const struct alpha_role *alpha_role(void);

/* The round and the leaf of the alpha_leaf_grad call in progress, set by the runtime before
 * each call (schedule.c): a kernel whose model uses dropout reads them, so its mask is a pure
 * function of (seed, round, example of the round, element) under every plan and resume. Leaves
 * are computed one at a time. */
extern uint32_t alpha_leaf_round, alpha_leaf_index;

/* Kernels generated by the compiler (kernels.o). */
void alpha_init_params(float *params);
/* One leaf: x is leaf_size * features floats, y_class leaf_size labels (class kind) and y_reg
 * leaf_size * outputs floats (regression kind); the unused one may be NULL.
 * Writes the leaf's gradient (sum over its examples in index order) into grad (n_params floats)
 * and returns the sum of the examples' losses in index order. */
float alpha_leaf_grad(const float *params, const float *x, const int32_t *y_class,
                      const float *y_reg, float *grad);
/* The same leaf, its every element (the returned loss excepted) stored as chain[0] + (chain[1]
 * + (... + (chain[n-1] + g))), g the value alpha_leaf_grad would store: the tree's additions
 * made as the gradient is stored (schedule.c). grad is none of the chain's vectors. Defined by
 * the compiler's CPU kernels; NULL for kernels without it (a GPU role's, the tests' fixtures). */
float alpha_leaf_grad_chain(const float *params, const float *x, const int32_t *y_class,
                            const float *y_reg, float *grad, const float *const *chain,
                            uint32_t n) __attribute__((weak));
/* Leaves l .. l + count - 1 of the round at once: x and the labels hold their rows, leaf after
 * leaf; grad gets the canonical tree's sum of their gradients and the return is the tree's sum
 * of their losses: the bits of alpha_leaf_grad per leaf added by the tree. count must be one
 * alpha_leaves_batch accepts (a size of a node of the canonical tree). Defined only for steps
 * the compiler can batch (codegen/leaves_kernel.py); both NULL otherwise. */
float alpha_leaves_grad(const float *params, const float *x, const int32_t *y_class,
                        const float *y_reg, float *grad, uint32_t count) __attribute__((weak));
int alpha_leaves_batch(uint32_t count) __attribute__((weak));
/* The learner on elements [start, start + count): params and grad_sum are the whole flat
 * arrays; state is the learner state of exactly those elements (state_slots arrays of count
 * floats, then state_scalars floats). grad_sum is the canonical-tree sum of the round's leaf
 * gradients; the kernel divides by the batch itself. step is the 0-based round index.
 * n_state = state_slots * n_params + state_scalars for a role that holds all of it. */
void alpha_apply(float *params, float *state, const float *grad_sum, uint32_t step,
                 uint64_t start, uint64_t count);
/* alpha_apply with the round's gradient given as two vectors: each element's gradient is
 * left[e] + right[e], added as the learner reads it (the combine tree's last addition, which
 * the schedule leaves to the learner when nothing else reads the sum: schedule.c). Defined by
 * the compiler's CPU kernels for a learner that does not clip; NULL otherwise. */
void alpha_apply_pair(float *params, float *state, const float *left, const float *right,
                      uint32_t step, uint64_t start, uint64_t count) __attribute__((weak));
/* Forward pass on leaf_size examples: out is leaf_size * outputs floats. */
void alpha_forward(const float *params, const float *x, float *out);
/* The CPU level the kernels run at, chosen once at start-up (cpu_level.c): the widest the CPU
 * supports of the levels the executable carries, or ALPHA_CPU_LEVEL's; NULL with *refused set
 * when ALPHA_CPU_LEVEL names one it cannot run. Defined by the compiler's CPU kernels
 * (codegen/levels.py); NULL for a GPU role's and the tests' fixtures. */
const char *alpha_cpu_level(const char **refused) __attribute__((weak));
/* The kernels also define alpha_scratch_floats and alpha_threads_hook, and call
 * alpha_parallel (pool.h): 0 and NULL, and no call, for kernels without tasks. */

#endif
