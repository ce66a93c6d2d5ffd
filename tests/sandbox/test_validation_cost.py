"""NOTE [validated on the loop or not] in sandbox/pool.py: what an answer costs to validate
decides whether it is validated on the event loop, and a tensor file, only hashed and its
header checked, weighs a sixteenth of a document byte."""

from __future__ import annotations

from gradtrace.sandbox.pool import ATTACHMENT_WEIGHT, ON_LOOP_VALIDATION, validation_cost
from gradtrace.sandbox.wire import Answer


def test_a_training_steps_answer_is_validated_on_the_loop_with_or_without_its_tensors() -> None:
    document = b"{" + b" " * (180 << 10) + b"}"
    assert validation_cost(Answer(document)) <= ON_LOOP_VALIDATION
    assert validation_cost(Answer(document, attachment=b"\0" * (150 << 10))) <= ON_LOOP_VALIDATION


def test_a_big_document_or_a_big_tensor_file_is_validated_off_the_loop() -> None:
    assert validation_cost(Answer(b" " * (ON_LOOP_VALIDATION + 1))) > ON_LOOP_VALIDATION
    big_file = b"\0" * (ATTACHMENT_WEIGHT * ON_LOOP_VALIDATION + ATTACHMENT_WEIGHT)
    assert validation_cost(Answer(b"{}", attachment=big_file)) > ON_LOOP_VALIDATION
