import pytest

from gate import query


@pytest.mark.parametrize(
    "typed, exact",
    [
        ("C++", '"c"'),
        ("node.js", '"node" AND ("js" OR "javascript")'),
        ("-O2", '"o2"'),
        ("topic:deploy", '"topic" AND "deploy"'),
        ("São Paulo", '"sao" AND "paulo"'),
        ("the deploy of the API", '"deploy" AND "api"'),
        ("configuração do deploy", '"configuracao" AND "deploy"'),
        ("K8s", '("k8s" OR "kubernetes")'),
        ("kubernetes", '("kubernetes" OR "k8s")'),
        ("会議", 'cjk : "会 議"'),
        ("Python3の会議", '"python3" AND cjk : "の 会 議"'),
    ],
)
def test_exact_tier_quotes_every_word(typed, exact):
    assert query.parse(typed).tiers()[0][:2] == ("exact", exact)


@pytest.mark.parametrize("typed", ["", "   ", "\n\t", "(", "*", '"', "😀", "^", "-", "::", "()*"])
def test_nothing_to_search_gives_no_tiers(typed):
    assert query.parse(typed).tiers() == []
    assert not query.parse(typed)


def test_operators_are_words_not_syntax():
    tiers = {tier.name: tier.expression for tier in query.parse("NOT deploy AND rollback OR NEAR").tiers()}
    # Upper-case operators are stop words or quoted words, never bare FTS5 syntax.
    assert tiers["exact"] == '"deploy" AND "rollback" AND "near"'


def test_a_query_of_stop_words_only_keeps_them():
    assert query.parse("OS").tiers()[0][1] == '"os"'
    assert query.parse("it is").tiers()[0][1] == '"it" AND "is"'


def test_duplicates_and_case_collapse():
    assert query.parse("Deploy deploy DEPLOY").tiers()[0][1] == '"deploy"'


def test_terms_are_capped():
    typed = " ".join(f"word{i}" for i in range(40))
    assert len(query.parse(typed).terms) == query.MAX_TERMS


def test_forms_tier_adds_stem_prefixes():
    tiers = {tier.name: tier.expression for tier in query.parse("React hooks").tiers()}
    assert tiers["forms"] == '"react"* AND "hook"*'
    assert tiers["loose"] == '"react"* OR "hook"*'


def test_single_term_has_no_loose_tier():
    assert [tier.name for tier in query.parse("deployment").tiers()] == ["exact", "forms"]


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
    assert query.stem(word) == stem


def test_quote_doubles_quotes():
    assert query.quote('say "hi"') == '"say ""hi"""'


def test_loose_tier_asks_for_half_the_terms_and_maps_phrases_to_terms():
    parsed = query.parse("js deploys staging")
    loose = parsed.tiers()[-1]
    assert loose.name == "loose"
    assert loose.expression == (
        '(("js" OR "javascript") AND "deploy"*) OR (("js" OR "javascript") AND "stag"*)'
        ' OR ("deploy"* AND "stag"*)'
    )
    # Phrases left to right: js, javascript, deploy*, js, javascript, stag*, deploy*, stag*
    assert loose.owners == (0, 0, 1, 0, 0, 2, 1, 2)
    assert query.parse("deploy script").tiers()[-1].expression == '"deploy"* OR "script"*'


def test_loose_tier_combines_the_given_terms_most_telling_first():
    parsed = query.parse("alpha beta gamma delta epsilon zeta eta theta")
    assert parsed.tiers(loose_order=[7, 6])[-1].expression == '"theta"* OR "eta"'  # too short to stem
    groups = parsed.tiers()[-1].expression.split(" OR ")
    assert len(groups) == 20  # 6 terms, any 3 of them
    assert groups[0] == '("alpha"* AND "beta"* AND "gamma"*)'
