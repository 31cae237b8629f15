"""Marginal tables of categorical data, built on :mod:`dpviz.core`.

Measurements: ResidualPlanner (Xiao, He, Toksoz, Ding, Zhang, Kifer, "An Optimal and Scalable Matrix
Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023) and isotropic marginal
measurements. Reconstruction: ReM, GReM-MLE, EMP and GReM-LNN (Mullins, Fuentes, Xiao, Kifer, Musco,
Sheldon, "Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024).

Unit of privacy: one record (add or remove one row).
"""
