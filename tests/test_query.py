import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.search import forms, query


@pytest.mark.parametrize(
    "typed, expression",
    [
        ("C++", '"c"'),
        ("node.js", '"node" OR "node"* OR "js" OR "javascript"'),
        ("-O2", '"o2"'),
        ("topic:deploy", '"topic" OR "topic"* OR "deploy" OR "deploy"*'),
        ("São Paulo", '"sao" OR "paulo" OR "paulo"*'),
        ("the deploy of the API", '"deploy" OR "deploy"* OR "api"'),
        ("configuração do deploy", '"configuracao" OR "configur"* OR "deploy" OR "deploy"*'),
        ("K8s", '"k8s" OR "kubernetes"'),
        ("会議", 'cjk : "会 議"'),
        ("Python3の会議", '"python3" OR cjk : "の 会 議"'),
    ],
)
def test_every_word_reaches_match_quoted(typed, expression):
    assert query.parse(typed).expression().text == expression


@pytest.mark.parametrize("typed", ["", "   ", "\n\t", "(", "*", '"', "😀", "^", "-", "::", "()*"])
def test_nothing_to_search_gives_no_expression(typed):
    assert query.parse(typed).expression() is None
    assert not query.parse(typed)


def test_operators_are_words_not_syntax():
    # Upper-case operators are stop words or quoted words, never bare FTS5 syntax.
    assert query.parse("NOT deploy AND rollback OR NEAR").expression().text == '"deploy" OR "deploy"* OR "rollback" OR "rollback"* OR "near" OR "near"*'


def test_a_query_of_stop_words_only_keeps_them():
    assert query.parse("OS").expression().text == '"os"'
    assert query.parse("it is").expression().text == '"it" OR "is"'


def test_duplicates_and_case_collapse():
    assert query.parse("Deploy deploy DEPLOY").expression().text == '"deploy" OR "deploy"*'


def test_terms_are_capped():
    typed = " ".join(f"word{i}" for i in range(40))
    assert len(query.parse(typed).terms) == query.MAX_TERMS


def test_word_forms_are_stem_prefixes():
    assert query.parse("React hooks").expression().text == '"react" OR "react"* OR "hooks" OR "hook"*'
    assert query.parse("kubernetes").expression().text == '"kubernetes" OR "k8s" OR "kubernet"*'


@pytest.mark.parametrize(
    "word, stem",
    [
        ("hooks", "hook"),
        ("testing", "test"),
        ("deployment", "deploy"),
        ("migrations", "migr"),
        ("configuracao", "configur"),
        ("server", "server"),
        ("api", None),
        ("k8s", None),
        ("uses", "uses"),
    ],
)
def test_stem(word, stem):
    assert forms.stem(word) == stem


def test_quote_doubles_quotes():
    assert query.quote('say "hi"') == '"say ""hi"""'


def test_the_expression_maps_each_phrase_to_its_term():
    found = query.parse("js deploys staging").expression()
    assert found.text == '"js" OR "javascript" OR "deploys" OR "deploy"* OR "staging" OR "stag"*'
    assert found.owners == (0, 0, 1, 1, 2, 2)
    # Exact forms (as typed, or a known abbreviation) tell facts holding the words themselves
    # from those holding other forms of them.
    assert found.exact == (True, True, True, False, True, False)


QUOTED = re.compile(r'(cjk : )?"(?:[^"]|"")*"\*?')


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_every_phrase_reaches_match_quoted_whatever_was_typed(typed):
    found = query.parse(typed).expression()
    if found is None:
        return
    phrases = found.text.split(" OR ")
    assert len(phrases) == len(found.owners) == len(found.exact)
    for phrase in phrases:
        assert QUOTED.fullmatch(phrase), phrase
