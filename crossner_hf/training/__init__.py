"""The training layer: arguments, the Trainer subclasses and every schedule.

Modules: ``runs`` (the run skeleton every runner shares), ``training_args`` (``FinetuneConfig``),
``trainer`` (``CrossNERTrainer``, ``JointTrainer``), ``schedules`` (direct, pretrain-then-finetune, joint),
``dapt`` (domain-adaptive pre-training), ``nerbert`` (NER-BERT pre-training), ``rnn`` (the RNN models'
loop and recipes). Imports every layer below it, ``corpora`` included (DAPT reads its corpora).
"""
