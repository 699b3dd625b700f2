"""What a model card cites: each loss's paper (a one-line citation with year and venue, and its
BibTeX), and clzoo itself as a `@software` entry."""

import dataclasses

from clzoo.version import __version__

REPOSITORY = "https://github.com/clzoo/clzoo"


@dataclasses.dataclass(frozen=True)
class Paper:
    """A paper a loss comes from: a one-line citation with year and venue, and its BibTeX."""

    cite: str
    bibtex: str


def _bibtex(kind, key, **fields):
    body = ",\n".join(f"  {name:<9} = {{{value}}}" for name, value in fields.items())
    return f"@{kind}{{{key},\n{body}\n}}"
PAPERS = {
    "SINCERELoss": Paper(
        "Feeney, P. and Hughes, M. C. SINCERE: Supervised Information Noise-Contrastive Estimation "
        "REvisited. arXiv:2309.14277, 2023.",
        _bibtex("article", "feeney2023sincere",
                title="{SINCERE}: Supervised Information Noise-Contrastive Estimation REvisited",
                author="Feeney, Patrick and Hughes, Michael C.",
                journal="arXiv preprint arXiv:2309.14277", year="2023",
                url="https://arxiv.org/abs/2309.14277")),
    "SupConLoss": Paper(
        "Khosla, P. et al. Supervised Contrastive Learning. Advances in Neural Information "
        "Processing Systems 33 (NeurIPS), 2020.",
        _bibtex("inproceedings", "khosla2020supervised", title="Supervised Contrastive Learning",
                author="Khosla, Prannay and Teterwak, Piotr and Wang, Chen and Sarna, Aaron and "
                       "Tian, Yonglong and Isola, Phillip and Maschinot, Aaron and Liu, Ce and "
                       "Krishnan, Dilip",
                booktitle="Advances in Neural Information Processing Systems", volume="33",
                year="2020", url="https://arxiv.org/abs/2004.11362")),
    "SupInfoNCELoss": Paper(
        "Barbano, C. A. et al. Unbiased Supervised Contrastive Learning. International Conference "
        "on Learning Representations (ICLR), 2023.",
        _bibtex("inproceedings", "barbano2023unbiased", title="Unbiased Supervised Contrastive Learning",
                author="Barbano, Carlo Alberto and Dufumier, Benoit and Tartaglione, Enzo and "
                       "Grangetto, Marco and Gori, Pietro",
                booktitle="International Conference on Learning Representations", year="2023",
                url="https://openreview.net/forum?id=Ph5cJSfD2XN")),
    "SpreadLoss": Paper(
        "Chen, M. F. et al. Perfectly Balanced: Improving Transfer and Robustness of Supervised "
        "Contrastive Learning. International Conference on Machine Learning (ICML), PMLR 162, 2022.",
        _bibtex("inproceedings", "chen2022perfectly",
                title="Perfectly Balanced: Improving Transfer and Robustness of Supervised "
                      "Contrastive Learning",
                author="Chen, Mayee F. and Fu, Daniel Y. and Narayan, Avanika and Zhang, Michael and "
                       "Song, Zhao and Fatahalian, Kayvon and R{\\'e}, Christopher",
                booktitle="Proceedings of the 39th International Conference on Machine Learning",
                series="Proceedings of Machine Learning Research", volume="162",
                pages="3090--3122", year="2022", url="https://proceedings.mlr.press/v162/chen22d.html")),
    "NSCLLoss": Paper(
        "Luthra, A., Yang, T. and Galanti, T. Self-Supervised Contrastive Learning is Approximately "
        "Supervised Contrastive Learning. Advances in Neural Information Processing Systems 38 "
        "(NeurIPS), 2025.",
        _bibtex("inproceedings", "luthra2025selfsupervised",
                title="Self-Supervised Contrastive Learning is Approximately Supervised "
                      "Contrastive Learning",
                author="Luthra, Achleshwar and Yang, Tianbao and Galanti, Tomer",
                booktitle="Advances in Neural Information Processing Systems", volume="38",
                year="2025", url="https://arxiv.org/abs/2506.04411")),
    "DCLLoss": Paper(
        "Yeh, C.-H. et al. Decoupled Contrastive Learning. European Conference on Computer Vision "
        "(ECCV), 2022.",
        _bibtex("inproceedings", "yeh2022decoupled", title="Decoupled Contrastive Learning",
                author="Yeh, Chun-Hsiao and Hong, Cheng-Yao and Hsu, Yen-Chi and Liu, Tyng-Luh and "
                       "Chen, Yubei and LeCun, Yann",
                booktitle="European Conference on Computer Vision (ECCV)", year="2022",
                doi="10.1007/978-3-031-19809-0_38", url="https://arxiv.org/abs/2110.06848")),
    "InfoNCELoss": Paper(
        "Chen, T., Kornblith, S., Norouzi, M. and Hinton, G. A Simple Framework for Contrastive "
        "Learning of Visual Representations. International Conference on Machine Learning (ICML), "
        "PMLR 119, 2020.",
        _bibtex("inproceedings", "chen2020simple",
                title="A Simple Framework for Contrastive Learning of Visual Representations",
                author="Chen, Ting and Kornblith, Simon and Norouzi, Mohammad and Hinton, Geoffrey",
                booktitle="Proceedings of the 37th International Conference on Machine Learning",
                series="Proceedings of Machine Learning Research", volume="119",
                pages="1597--1607", year="2020", url="https://arxiv.org/abs/2002.05709")),
    "SoftTargetInfoNCELoss": Paper(
        "Hugger, J. and Uhlmann, V. Towards noise contrastive estimation with soft targets for "
        "conditional models. arXiv:2404.14076, 2024.",
        _bibtex("article", "hugger2024towards",
                title="Towards noise contrastive estimation with soft targets for conditional models",
                author="Hugger, Johannes and Uhlmann, Virginie", journal="arXiv preprint arXiv:2404.14076",
                year="2024", url="https://arxiv.org/abs/2404.14076")),
}


def clzoo_bibtex(version=None, year=None):
    """BibTeX `@software` entry of clzoo: `version` defaults to this one; `year` is left out when
    None (a card gives the version and year its preset was built with, so it never changes)."""
    fields = dict(title="clzoo: Keras 3 model zoo and training recipes for supervised and "
                        "self-supervised contrastive learning",
                  author="{clzoo developers}", version=version or __version__)
    if year is not None:
        fields["year"] = str(year)
    return _bibtex("software", "clzoo", **fields, url=REPOSITORY)
