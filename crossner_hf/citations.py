"""The BibTeX of the papers the package implements, one copy for cards, reports and the metric module."""

from __future__ import annotations

CITATIONS = {
    "crossner": """@inproceedings{liu2021crossner,
  title     = {CrossNER: Evaluating Cross-Domain Named Entity Recognition},
  author    = {Liu, Zihan and Xu, Yan and Yu, Tiezheng and Dai, Wenliang and Ji, Ziwei and
               Cahyawijaya, Samuel and Madotto, Andrea and Fung, Pascale},
  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence},
  volume    = {35}, number = {15}, pages = {13452--13460}, year = {2021}
}""",
    "nerbert": """@article{liu2021nerbert,
  title   = {NER-BERT: A Pre-trained Model for Low-Resource Entity Tagging},
  author  = {Liu, Zihan and Jiang, Feijun and Hu, Yuxiang and Shi, Chen and Fung, Pascale},
  journal = {arXiv preprint arXiv:2112.00405}, year = {2021}
}""",
    "cdlm": """@inproceedings{jia2019cross,
  title     = {Cross-Domain {NER} using Cross-Domain Language Modeling},
  author    = {Jia, Chen and Liang, Xiaobo and Zhang, Yue},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
  pages     = {2464--2474}, year = {2019}
}""",
    "coach": """@inproceedings{liu2020coach,
  title     = {Coach: A Coarse-to-Fine Approach for Cross-domain Slot Filling},
  author    = {Liu, Zihan and Winata, Genta Indra and Xu, Peng and Fung, Pascale},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics},
  year      = {2020}
}""",
    "multicell": """@inproceedings{jia2020multi,
  title     = {Multi-Cell Compositional {LSTM} for {NER} Domain Adaptation},
  author    = {Jia, Chen and Zhang, Yue},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics},
  year      = {2020}
}""",
}
