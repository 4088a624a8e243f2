"""The Schema Registry API's config and mode views: a subject's (or the registry's)
compatibility level, mode and data-contract settings, as the reference's ConfigResource
and ModeResource answer them. A subject's path naming the default context itself (`:.:`)
names the registry's own (subjects.names_registry)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.registry import formats, selectors, subjects, versions
from apps.registry.confluent import wire
from apps.registry.confluent.base import (
    ConfluentView,
    flag,
    is_admin,
    named_subject,
    parsed_subject,
    read_body,
)
from apps.registry.confluent.errors import (
    RegistryError,
    subject_not_found,
)
from apps.registry.models import REGISTRY_MODES
from apps.registry.versions import contracts

ERRORS, TAG = wire.ERRORS, wire.TAG


def _mode_echo(request) -> dict:
    """A PUT /mode's answer: the request as it was sent (`readonly` stays lowercase), as
    the reference echoes its ModeUpdateRequest."""
    return {"mode": read_body(request).get("mode")}


def _mode_in(request) -> str | None:
    """The mode a PUT sends; None for `"mode": null`: the mode is cleared, as the
    reference reads a request without one. A body that names no mode at all is refused
    (42204), as Steward refuses a body with none of the fields it reads."""
    body = read_body(request)
    if "mode" in body and body["mode"] is None:
        return None
    mode = str(body.get("mode", "")).upper()
    if mode not in REGISTRY_MODES:
        raise RegistryError(
            422,
            42204,
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, and IMPORT",
        )
    return mode


def _config_in(request) -> tuple[str | None, dict]:
    """The level (None: not sent) and the data-contract settings a config body sends; a
    body that sends neither is an invalid level, as the reference answers it."""
    body = read_body(request)
    given = contracts.valid_config(body)
    sent = body.get("compatibility", body.get("compatibilityLevel"))
    if sent is None and given:
        return None, given
    level = str(sent or "").upper()
    if level not in formats.MODES:
        raise RegistryError(422, 42203, f"Invalid compatibility level '{level[:50]}'.")
    return level, given


def _config_out(level: str | None, settings: dict, key: str = "compatibilityLevel") -> dict:
    answer = {key: level} if level else {}
    return {**answer, **{k: v for k, v in settings.items() if v is not None}}


class Mode(ConfluentView):
    @extend_schema(tags=TAG, operation_id="schema_registry_mode", responses={200: wire.ModeIn})
    def get(self, request):
        """The registry's mode."""
        return Response({"mode": selectors.global_registry_mode()})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_mode_set",
        request=wire.ModeIn,
        responses={200: wire.ModeIn, **ERRORS},
    )
    def put(self, request):
        """The registry's mode: operators (and `registry:admin` tokens) only. IMPORT only
        on a registry with no live subject yet, unless `force=true` (42205). No mode
        (`"mode": null`) clears it: READWRITE again, `{"mode": null}` answered."""
        mode = _mode_in(request)
        versions.set_registry_default(
            actor=request.actor,
            key="mode",
            value=mode,
            registry_admin=is_admin(request),
            force=flag(request, "force"),
        )
        return Response(_mode_echo(request))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_mode_reset",
        responses={200: wire.ModeIn, **ERRORS},
    )
    def delete(self, request):
        before = selectors.global_registry_mode()
        versions.set_registry_default(
            actor=request.actor, key="mode", value=None, registry_admin=is_admin(request)
        )
        return Response({"mode": before})


class SubjectMode(Mode):
    @extend_schema(tags=TAG, responses={200: wire.ModeIn, **ERRORS})
    def get(self, request, subject):
        """The subject's own mode (40409 when it has none); with `defaultToGlobal=true`,
        the mode it is in (its own, else the registry's). `:.:`: the registry's."""
        if subjects.names_registry(subject):
            return super().get(request)
        named = parsed_subject(subject)
        topic = selectors.topic_by_name(named.topic)
        if not flag(request, "defaultToGlobal") and not selectors.own_registry_mode(
            topic, named.role
        ):
            raise RegistryError(
                404, 40409, f"Subject '{subject[:300]}' does not have subject-level mode configured"
            )
        return Response({"mode": selectors.registry_mode_of(topic, named.role)})

    @extend_schema(tags=TAG, request=wire.ModeIn, responses={200: wire.ModeIn, **ERRORS})
    def put(self, request, subject):
        """The subject's own mode (its topic's other subjects keep theirs): the topic's
        producers, operators and `registry:admin` tokens. IMPORT only on a subject with
        no version yet, unless `force=true`. No mode (`"mode": null`) clears the
        subject's own, if any. `:.:`: the registry's."""
        if subjects.names_registry(subject):
            return super().put(request)
        mode = _mode_in(request)
        if mode is None:
            versions.subject_mode_clear(
                actor=request.actor,
                subject=named_subject(subject),
                registry_admin=is_admin(request),
            )
            return Response(_mode_echo(request))
        versions.subject_mode_set(
            actor=request.actor,
            subject=named_subject(subject),
            mode=mode,
            force=flag(request, "force"),
            registry_admin=is_admin(request),
        )
        return Response(_mode_echo(request))

    @extend_schema(tags=TAG, responses={200: wire.ModeIn, **ERRORS})
    def delete(self, request, subject):
        """The subject's own mode removed (answered): it follows the registry's again.
        40401 when it had none, as the reference answers. `:.:`: the registry's."""
        if subjects.names_registry(subject):
            return super().delete(request)
        before = versions.subject_mode_clear(
            actor=request.actor, subject=parsed_subject(subject), registry_admin=is_admin(request)
        )
        if not before:
            raise subject_not_found(subject)
        return Response({"mode": before})


class Config(ConfluentView):
    """The registry's default compatibility level (an operator's, else Steward's
    configuration, STEWARD_REGISTRY_DEFAULT_MODE) and data-contract settings."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config",
        responses={200: wire.Level, **ERRORS},
    )
    def get(self, request):
        return Response(_config_out(selectors.default_mode(), selectors.registry_contract()))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_set",
        request=wire.LevelIn,
        responses={200: wire.LevelIn, **ERRORS},
    )
    def put(self, request):
        """Operators (and `registry:admin` tokens) only; a lowered level is announced on
        every topic that follows it. Fields left out keep their value."""
        level, given = _config_in(request)
        admin = is_admin(request)
        if level is not None:
            versions.set_registry_default(
                actor=request.actor, key="compatibility", value=level, registry_admin=admin
            )
        if given:
            versions.set_contract_config(
                actor=request.actor, topic=None, values=given, registry_admin=admin
            )
        return Response(_config_out(level, given, key="compatibility"))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_reset",
        responses={200: wire.Level, **ERRORS},
    )
    def delete(self, request):
        """Back to Steward's configured level, without data-contract settings."""
        settings = selectors.registry_contract()
        before = _config_out(selectors.default_mode(), settings)
        admin = is_admin(request)
        versions.set_registry_default(
            actor=request.actor, key="compatibility", value=None, registry_admin=admin
        )
        if settings:
            versions.set_contract_config(
                actor=request.actor, topic=None, values=None, registry_admin=admin
            )
        return Response(before)


class SubjectConfig(Config):
    @extend_schema(tags=TAG, responses={200: wire.Level, **ERRORS})
    def get(self, request, subject):
        """The subject's own level and data-contract settings (40408 when it has
        neither); with `defaultToGlobal=true`, those in force (the registry's where it
        has none). `:.:`: the registry's."""
        if subjects.names_registry(subject):
            return super().get(request)
        named = parsed_subject(subject)
        topic = selectors.topic_by_name(named.topic)
        own = selectors.own_level(topic, named.role)
        settings = selectors.subject_contract(topic, named.role)
        if flag(request, "defaultToGlobal"):
            registry = selectors.registry_contract()
            level = own or selectors.default_mode()
            return Response(_config_out(level, contracts.config_in_force(settings, registry)))
        if not own and not settings:
            raise RegistryError(
                404,
                40408,
                f"Subject '{subject[:300]}' does not have subject-level compatibility configured",
            )
        return Response(_config_out(own, settings))

    @extend_schema(tags=TAG, responses={200: wire.Level, **ERRORS})
    def delete(self, request, subject):
        """Back to the registry's level and settings (audited, and announced if that
        lowers the level): the level and settings it had answered; 40401 when it had
        none, as the reference answers. `:.:`: the registry's."""
        if subjects.names_registry(subject):
            return super().delete(request)
        named = parsed_subject(subject)
        topic = selectors.topic_by_name(named.topic)
        own = selectors.own_level(topic, named.role)
        settings = selectors.subject_contract(topic, named.role)
        if not own and not settings:
            raise subject_not_found(subject)
        admin = is_admin(request)
        if own:
            versions.set_mode(
                actor=request.actor, topic=topic, mode="", role=named.role, registry_admin=admin
            )
        if settings:
            versions.set_contract_config(
                actor=request.actor,
                topic=topic,
                role=named.role,
                values=None,
                registry_admin=admin,
            )
        return Response(_config_out(own, settings))

    @extend_schema(tags=TAG, request=wire.LevelIn, responses={200: wire.LevelIn, **ERRORS})
    def put(self, request, subject):
        """The subject's own level and data-contract settings (its topic's other subjects
        keep theirs), a subject with no schema yet's too: the topic's producers,
        operators and `registry:admin` tokens. Fields left out keep their value. `:.:`:
        the registry's."""
        if subjects.names_registry(subject):
            return super().put(request)
        level, given = _config_in(request)
        admin = is_admin(request)
        named = named_subject(subject)
        topic = versions.subject_topic(actor=request.actor, subject=named, registry_admin=admin)
        if level is not None:
            versions.set_mode(
                actor=request.actor, topic=topic, mode=level, role=named.role, registry_admin=admin
            )
        if given:
            versions.set_contract_config(
                actor=request.actor,
                topic=topic,
                role=named.role,
                values=given,
                registry_admin=admin,
            )
        return Response(_config_out(level, given, key="compatibility"))
