# License: GPLv3 Copyright: the Book AI developers
"""What the reader set for one provider (a provider's `config`): its options' values, checked,
its key, its address, its timeouts, and why it cannot be used yet, in a sentence.

An instance's settings are fixed for its life (the settings dialog makes new providers), so
each value is read once and what is derived from them is computed once, not for every request.
"""

from functools import cached_property
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.core.errors import MissingKey, NotConfigured
from calibre_plugins.bookai.core.transport import Timeouts
from calibre_plugins.bookai.providers.options import unusable_values
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import SecretStore, secret_store

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


class ProviderConfig:
    """The settings of one provider: given (tests, one-off use) or the user's saved ones."""

    def __init__(self, provider: 'type[AIProviderPlugin]', settings: dict | None = None,
                 secrets: SecretStore | None = None):
        """provider: the class that declares the options; settings: option values (default: the
        user's saved ones); secrets: a store with get(provider, name) (default: the user's)."""
        self.provider = provider
        self._settings = settings
        self._secrets = secrets
        self._options_read: dict[str, Any] = {}

    @property
    def settings(self) -> dict:
        """The option values as saved (or as given when made)."""
        if self._settings is None:
            saved = plugin_prefs()['providers'].get(self.provider.name, {})
            self._settings = dict(saved) if isinstance(saved, dict) else {}
        return self._settings

    @property
    def secrets(self) -> SecretStore:
        """The store the API key is kept in."""
        if self._secrets is None:
            self._secrets = secret_store()
        return self._secrets

    # an option's value is of its kind (Option.kind: text, a number, a flag...), which its name alone
    # does not tell a type checker: Any
    def option(self, name: str) -> Any:
        """The value of an option: as set, else its default. Read once per instance."""
        try:
            return self._options_read[name]
        except KeyError:
            value = self._options_read[name] = self.read_option(name)
            return value

    def read_option(self, name: str) -> Any:
        """The value of an option as the settings hold it, checked; its default when it cannot be used."""
        if name in self.settings and name != 'api_key':
            try:
                return self.provider.option_named(name).check(self.settings[name])
            except KeyError:  # not an option of this provider's: as it is
                return self.settings[name]
            except ValueError:  # an edited or damaged settings file: missing_setup() says what is wrong
                return self.provider.option_named(name).default
        if name == 'api_key':
            if 'api_key' in self.settings:  # given explicitly (tests, one-off use)
                return self.settings['api_key']
            return self.secrets.get(self.provider.name, 'api_key')
        if name == 'reasoning_effort':
            return self.global_setting('reasoning_effort', 'auto')
        return self.provider.option_named(name).default

    def global_setting(self, name: str, default: object) -> Any:
        """A setting of the plugin's, not of one provider's (from the settings given, when given)."""
        if self._settings is not None:
            return self._settings.get(name, default)
        return plugin_prefs().get(name, default)

    @cached_property
    def api_key(self) -> str:
        return self.option('api_key') if (self.provider.needs_key or self.provider.key_optional) else ''

    @cached_property
    def base_url(self) -> str:
        return self.provider.address(self)

    @cached_property
    def timeouts(self) -> Timeouts:
        return Timeouts(connect=float(self.option('connect_timeout')), read=float(self.option('read_timeout')))

    def missing_setup(self) -> str:
        """Why this provider cannot be used yet, in a sentence; '' when it can."""
        return self._missing_setup

    def wrong_setting(self) -> str:
        """What is wrong with a value saved for one of the options, in a sentence; '' when
        every value saved can be used (the file was edited, or written by an older version)."""
        for option, problem in unusable_values(self.provider.all_options(), self.settings):
            return _('The setting "{option}" of {provider} cannot be used: {problem}. Change it in the '
                     'settings.').format(option=option.label, provider=self.provider.display_name, problem=problem)
        return ''

    @cached_property
    def _missing_setup(self) -> str:
        if problem := self.wrong_setting():
            return problem
        name = self.provider.display_name
        if not self.option('enabled'):
            return _('{provider} is disabled in the settings.').format(provider=name)
        if not self.base_url:
            return _('{provider} needs the address of its server.').format(provider=name)
        if self.provider.needs_key and not self.api_key:
            return _('{provider} needs an API key: add it in the settings.').format(provider=name)
        return ''

    def check_setup(self) -> None:
        """Raises MissingKey or NotConfigured, with why in a sentence, unless the provider can be used."""
        if problem := self.missing_setup():
            raise (MissingKey if self.provider.needs_key and not self.api_key else NotConfigured)(problem)
