"""netcast: closed forms only (:mod:`.closed_forms`); there is no instance file or exact model."""
