" Highlighting for Alpha sources where semantic tokens are not available (Neovim before 0.9).
" The TextMate grammar grammars/alpha.tmLanguage.json is the complete one.
if exists('b:current_syntax')
  finish
endif

syn keyword alphaDeclaration system plan pairing nextgroup=alphaDeclName skipwhite
syn match alphaDeclName /\<[A-Za-z_][A-Za-z0-9_]*\>/ contained
syn keyword alphaKeyword for in data batch leaves param fn loss learner steps arithmetic
syn keyword alphaConstant fused unfused
syn keyword alphaKeyword roles topology round contract state checkpoint every rounds
syn keyword alphaKeyword each computes over its combine by deliver to applies replicated partitioned
syn keyword alphaKeyword host gpu memory cores
syn keyword alphaStatement let return
syn keyword alphaBuiltin relu tanh sigmoid exp log sqrt abs square gelu silu sum mean max min
syn keyword alphaBuiltin maximum minimum clamp softmax log_softmax reshape transpose causal_mask
syn keyword alphaBuiltin embed dropout slice conv2d max_pool avg_pool
syn keyword alphaBuiltin sgd momentum adam adamw softmax_cross_entropy sigmoid_cross_entropy mse
syn keyword alphaBuiltin zeros ones constant normal uniform load xavier_uniform xavier_normal
syn keyword alphaBuiltin glorot_uniform glorot_normal he_uniform he_normal kaiming_uniform
syn keyword alphaBuiltin kaiming_normal linear cosine step
syn keyword alphaBuiltin table synthetic sequences npy npz tokens shuffle pair star hierarchy exact approximate
syn keyword alphaConstant grad canonical tree all x86_64 aarch64 last params grads optimizer
" f32[B, 64] in a system; worker[3] in a plan
syn match alphaType /\<[A-Za-z_][A-Za-z0-9_]*\ze\[/
syn match alphaArgument /\<[A-Za-z_][A-Za-z0-9_]*\ze\s*:\s*[-0-9."A-Za-z]/
syn match alphaNumber /\<[0-9]\+\(\.[0-9]*\)\=\([eE][-+]\=[0-9]\+\)\=\>/
syn match alphaNumber /\.[0-9]\+\([eE][-+]\=[0-9]\+\)\=\>/
syn match alphaOperator /[-+*\/@=]\|->\|\.\./
syn region alphaString start=/"/ end=/"/ oneline
syn match alphaComment /#.*$/ contains=@Spell

hi def link alphaDeclaration Keyword
hi def link alphaDeclName Identifier
hi def link alphaKeyword Keyword
hi def link alphaStatement Statement
hi def link alphaBuiltin Function
hi def link alphaConstant Constant
hi def link alphaType Type
hi def link alphaArgument Identifier
hi def link alphaNumber Number
hi def link alphaOperator Operator
hi def link alphaString String
hi def link alphaComment Comment

let b:current_syntax = 'alphadsl'
