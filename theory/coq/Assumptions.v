(** The axioms each main theorem depends on ([python -m theory] copies this output into docs/theory.md). *)
From ResiSpec Require Import Sequential Sps RrsWor ResispecWor Resispec Paper Optimal.

Print Assumptions sequential_exact.
Print Assumptions law_defect.
Print Assumptions sps_exact.
Print Assumptions sps_acceptance_TV.
Print Assumptions sps_accept_range.
Print Assumptions rrs_exact.
Print Assumptions rrs_wor_exact.
Print Assumptions resispec_wor_exact.
Print Assumptions resispec_exact.
Print Assumptions rs_accept_range.
Print Assumptions paper_counterexample.
Print Assumptions paper_not_exact.
Print Assumptions single_draft_optimal.
Print Assumptions sps_optimal.
