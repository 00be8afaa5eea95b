"""One module per ``crossner-hf`` subcommand, each with ``make_parser()`` and ``main(*parsed)``.

The shape is TRL's (``trl/scripts/*.py``): ``make_parser(subparsers=None)`` returns a
:class:`~crossner_hf.arguments.CrossNERParser` (:func:`~crossner_hf.arguments.make_command_parser`; added to
``subparsers`` when given, so the ``crossner-hf`` CLI can list it), and ``main(*parsed)`` runs the command on the
parsed dataclasses, in the parser's order (:func:`crossner_hf.cli.run_command`: one-line errors): one for most
commands; for ``train``, ``dapt`` and ``nerbert`` their model and data flags, then their config, as TRL's scripts
parse a config beside their script arguments. The runnable files in
``dataset_scripts/`` and ``trainer_recipes/`` are thin shims over these modules, so a non-editable install has every
command.

The labeled-data flags are declared once, beside the loader they feed
(:class:`crossner_hf.data.target.LabeledDataArguments`: ``--domain`` / ``--dataset_dir SOURCE``,
``--text_column_name``, ``--label_column_name``, ``--strict``, ``--data_dir``, ``--data_name``; ``train``,
``bilstm-crf``, ``cdlm``, ``multicell`` (through :mod:`crossner_hf.commands.rnn_args`), ``export``,
``build-corpora``, ``data``, ``adapt`` and ``compare`` take it as it is; ``predict``, ``report``, ``confusion`` and
``plot-entities`` take :class:`~crossner_hf.data.target.SplitDataArguments`, the same flags plus ``--split``). Every
one of them loads its target through :meth:`~crossner_hf.data.target.LabeledDataArguments.load_target`, so a source
opens, fails and is named the same way whatever the command.
"""
