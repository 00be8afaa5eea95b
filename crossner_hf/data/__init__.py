"""The data layer: CrossNER's labels and files, CoNLL reading, target datasets, words, tokenisation, MLM collators, dataset statistics.

Modules: ``labels`` (label lists, domains, merged ids), ``entities`` (entities read off tags), ``conll`` (reading
CoNLL files with errors that name file and line; a CoNLL folder's files and tag list), ``columns`` (any dataset's
columns, cells and tags), ``files`` (JSON Lines / CSV / Parquet folders, every malformed line named file:line; any
source's splits), ``target`` (``load_target``, the one labeled-data loader: CrossNER domains, CoNLL folders and any
``load_dataset`` source; every seeded draw: few-shot sets, corpus shares; the data flags), ``check``
(``check_dataset``: every problem of a dataset, no model), ``words`` (sentence and word splitting), ``tokenization``
(sub-word alignment), ``masking`` (the DAPT collators), ``stats`` (Table 1, Figure 1), ``source`` (CoNLL-2003 in
a target's label space). Imports nothing above it.

Each name is imported from its module (``from crossner_hf.data.target import load_target``); the package itself
names nothing."""
