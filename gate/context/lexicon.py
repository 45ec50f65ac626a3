"""What the words of a request and of a rule's description are about, in English and Portuguese.

Three word lists, folded as gate.context.words folds text (lower case, no accents):

- TOPICS: the subjects rule files of a software project are written about, each with the words
  and short phrases that name it in either language (`refund`, `estorno` and `chargeback` all
  say payments). A request and a description that share a topic share a subject even when they
  share no word, and across the two languages. A word may name several topics (`invoice` is
  payments and taxes). The lists are general developer vocabulary, not the labelled set's words:
  they were written from the subjects, and corrected only on the tuning half of the set.
- FILLER: words of a request that say it is work without saying which (`fix`, `add`, `please`,
  `faz`), which no overlap may rest on.
- SMALL_TALK: words that carry no work at all (`thanks`, `yes`, `valeu`, `weather`). A request
  made only of these (and stop words, laughter, emoji) injects nothing, whatever came before it;
  filler is still a request ("try again"). A small-talk word names a topic only as spelled in
  TOPICS, not by its stem (`night` is not `nightly` jobs).
- ASKING: the filler that asks for something (`fix`, `do`, `try`, `again`, `faz`, `tenta`,
  `isso`): a request with no evidence of its own leans on the earlier requests only when it holds
  one of these (or of CONTINUING). Question words and nouns (`who`, `qual`, `page`) do not ask:
  "who won the game last night?" after a migration is not about the migration.
"""

from __future__ import annotations

TOPICS: dict[str, str] = {
    "payment": """
        payment payments pay paid paying payer charge charged charges charging chargeback chargebacks
        refund refunds refunded refunding dispute disputes checkout stripe adyen paypal braintree pix boleto
        boletos card cards cartao cartoes credit debit cobranca cobrancas cobrar estorno estornos estornar
        estornado reembolso reembolsos pagamento pagamentos pagar pago paga transaction transactions transacao
        transacoes acquirer gateway billing subscription subscriptions assinatura assinaturas recorrencia
        installment installments parcela parcelas parcelamento declined recusado recusada wallet carteira
        payout payouts invoice invoices fatura faturas mercadopago mercado_pago pagseguro capture captura
        idempotency_key
        payment_intent payment_method receipt recibo merchant psp split_payment
    """,
    "dependency": """
        dependency dependencies dependencia dependencias package packages pacote pacotes library libraries lib
        libs biblioteca bibliotecas upgrade upgrades upgraded upgrading bump bumps bumped downgrade sdk sdks
        npm pip yarn pnpm poetry uv requirements requirements_txt lockfile lockfiles lock_file lock_files package_json
        package_lock poetry_lock dependabot renovate deprecated deprecation obsoleta atualizar atualize atualiza atualizacao
        atualizacoes vendored transitive
        semver cve cves @version
        composer gem gemfile cargo go_mod pom gradle maven outdated desatualizada desatualizado pin pinned unpin breaking_change
    """,
    "performance": """
        performance slow slower slowly slowness fast faster speed speedup lento lenta lentos lentidao demora
        demorando demorado rapido rapida latency latencia profile profiling profiler flamegraph bottleneck
        gargalo optimize optimise optimization otimizar otimize otimiza otimizacao cache caches caching cached
        memoize memory leak leaks oom ram cpu throughput n_1
        heavy pesado pesada benchmark benchmarks
        speed_up takes_forever too_slow load_time slow_query explain_analyze lazy_loading batch bulk hot_path quadratic memory_usage cpu_usage lag laggy freeze travando carregamento
    """,
    "database": """
        database databases db sql query queries consulta consultas banco postgres postgresql mysql sqlite
        orm table tables tabela tabelas column columns coluna colunas index indexes indices indice row rows
        linhas registro registros
    """,
    "schema": """
        migration migrations migrate migrating migracao migracoes migrar schema schemas esquema ddl alter
        alter_table column columns coluna colunas nullable constraint constraints foreign_key primary_key
        unique_index index indexes indice indices backfill backfills rename_column drop_column add_column
        create_table table tables tabela tabelas alembic flyway liquibase
    """,
    "i18n": """
        i18n l10n internationalisation internationalization localisation localization locale locales
        translation translations translate translated translating traducao traducoes traduzir traduza
        traduz traduzido language languages idioma idiomas lingua portuguese portugues english ingles
        spanish espanhol german alemao french frances pt_br en_us plural plurals pluralization
        gettext po_file plural_forms messages_json translatable rtl multilingual multilingue
        language_switcher arabic japanese chinese translator crowdin lokalise i18next intl en_us
    """,
    "formatting-locale": """
        currency currencies moeda moedas date_format number_format timezone fuso r$ formato_americano
    """,
    "logging": """
        log logs logging logged logger loggers log_line log_lines logar loga logando registrar_log
        structured_logging formatter stdout stderr syslog
        log_level debug_log console_log audit_log print prints printing
    """,
    "pii": """
        pii personal personal_data dados_pessoais email emails e_mail e_mails cpf cnpj rg phone_number
        telefone telefones address addresses endereco enderecos card_number
        numero_do_cartao mask masking masked mascara mascarar mascare redact redacted redaction anonymize
        anonymise anonimizar sensitive sensivel sensiveis
        ssn social_security date_of_birth birthdate ip_address full_name nome_completo personal_information tax_id
    """,
    "privacy": """
        privacy privacidade gdpr lgpd consent consentimento consentimentos cookie cookies titular
        retention retencao erase erasure delete_my_account account_deletion exclusao apagar_dados
        data_export exportar_dados opt_out right_to_be_forgotten portability
        portabilidade export_data download_data their_data seus_dados
        right_to_erasure cookie_banner data_subject privacy_policy data_retention
    """,
    "security": """
        security seguranca secure inseguro insecure auth authentication autenticacao authenticate login
        logins logout signin sign_in oauth oidc sso saml jwt session sessions sessao sessoes password
        passwords senha senhas hash hashing hashed bcrypt argon2 scrypt authorization autorizacao authorize
        permission permissions permissao permissoes role roles admin admins rbac acl xss csrf injection
        sql_injection sanitize sanitise sanitization escape escaping vulnerability vulnerabilities
        vulnerabilidade cve idor exploit 2fa mfa raw_html innerhtml
        dangerouslysetinnerhtml unescaped access_control another_user someone_else acesso_indevido
        cors rate_limit brute_force otp privilege escalation encrypt encryption criptografia tls https certificate ssrf rce path_traversal captcha
    """,
    "testing": """
        test tests testing tested teste testes testar unit_test unit_tests integration_test pytest unittest
        jest vitest mocha cypress playwright fixture fixtures mock mocks mocking mocked stub stubs fake flaky
        instavel intermitente aleatoriamente coverage cobertura assert assertion assertions e2e tdd
        snapshot_test
        spec specs test_suite regression_test property_based hypothesis conftest testcase failing_test caso_de_teste
    """,
    "ci": """
        ci ci_cd pipeline pipelines workflow workflows github_actions actions gitlab_ci jenkins circleci
        runner runners build_job build_cache lint lint_job linter status_check required_check
        required_checks red_build cache_step artifact artifacts matrix
        github_action workflow_file pre_commit ci_job travis buildkite azure_pipelines status_checks branch_protection
    """,
    "docs": """
        documentation docs doc documentacao documentar documente documenta readme guide guides guia tutorial
        docstring docstrings reference referencia manual changelog_docs getting_started howto how_to
        comments comentarios wiki
        document readme_md docs_site mkdocs sphinx jsdoc typedoc comment usage example examples exemplo contributing adr
    """,
    "frontend": """
        frontend front_end react component components componente componentes jsx tsx props
        usestate useeffect hook_react custom_hook redux zustand form forms formulario formularios
        modal modals button buttons botao botoes ui user_interface interface_do_usuario
        render renders rerender re_render accessibility acessibilidade a11y aria screen_reader
        leitor_de_tela keyboard teclado focus dropdown upload next_js nextjs vue angular svelte
        spa client_side browser navegador dom event_handler onclick click clique tooltip toast autocomplete checkbox form_validation
    """,
    "styling": """
        css scss sass tailwind style styles styling estilo estilos colour colours color colors cor cores
        font fonts fonte fontes typography tipografia layout layouts responsive responsivo responsiva
        mobile_layout celular breakpoint breakpoints dark_mode dark_theme tema_escuro theme themes tema margin
        margins padding spacing espacamento alinhamento desalinhado align aligned overlap overlaps
        sidebar header footer rodape cabecalho design_token design_tokens tokens_de_design contrast
        contraste brand_colour brand_color px flexbox grid
        media_query icon icons animation animacao hover z_index centered centralizar feio visual light_mode
    """,
    "api": """
        api apis rest restful endpoint endpoints rota rotas route routes @path @verb
        http status_code status_codes pagination paginate paginacao cursor versioning versionamento v1 v2
        openapi swagger graphql request_body response responses resposta respostas json_response
        error_format formato_de_erro 404 400 401 403 409 422 500 200 201
        payload query_params query_string contract webhook_endpoint
    """,
    "release": """
        release releases releasing lancamento lancamentos notas_de_lancamento release_notes changelog
        changelogs version versions versao versoes versioning tag tags tagging tagged publish published
        publishing publique pypi npm_publish semver @version
        version_bump release_candidate cut_a_release ship_it
    """,
    "secrets": """
        secret secrets segredo segredos credential credentials credencial credenciais api_key api_keys
        apikey chave chaves chave_da_api key_vazada token tokens env dotenv env_file env_example vault
        rotate rotation rotacionar leaked leak vazou vazamento vazada hardcoded aws_access_key
        access_key private_key sendgrid_key
        secret_key ssh_key env_var env_vars environment_variable environment_variables variaveis_de_ambiente kms secrets_manager plaintext
    """,
    "git": """
        git commit commits commitar commit_message mensagem_de_commit branch branches pull_request
        pull_requests pr prs merge_request rebase squash reword cherry_pick
        git_log conventional_commits amend stash merge_conflict conflito
    """,
    "deploy": """
        deploy deploys deployed deploying deployment deployments implantar subir_para producao production
        prod staging homologacao docker dockerfile image images imagem container containers kubernetes k8s
        kubectl helm manifest manifests cluster clusters pod pods replica replicas replicas_k8s rollback
        rollbacks roll_back rollout hotfix ecs fly_io heroku vercel terraform
        ansible ec2 lambda serverless nginx load_balancer ingress blue_green scale scaling autoscaling escalar server servidor vps
    """,
    "feature-flag": """
        feature_flag feature_flags flag flags toggle toggles launchdarkly unleash rollout rollouts
        gradual_rollout canary percent_of_users beta ligar desligar liberar libera desligada ligada
        kill_switch experiment ab_test a_b dark_launch opt_in early_access
    """,
    "errors": """
        error errors erro erros exception exceptions excecao excecoes raise raises catch caught try_except
        retry retries retrying retentativa backoff exponential_backoff timeout timeouts circuit_breaker
        fallback traceback stack_trace crash crashes falha falhas cai caiu trata tratar tratamento
        error_message mensagem_de_erro blank_page tela_branca graceful times_out timed_out
        time_out
        error_page unhandled swallow swallowed silently fails_silently graceful_degradation sentry panic
    """,
    "jobs": """
        job jobs background_job background_jobs queue queues fila filas worker workers celery sidekiq rq
        task tasks tarefa tarefas cron crontab scheduled schedule agendada agendado agendar nightly
        periodic idempotent idempotente consumer consumers producer kafka rabbitmq sqs
        background async_task bull resque dead_letter dlq backlog enqueue dequeue
    """,
    "observability": """
        metric metrics metrica metricas dashboard dashboards painel paineis prometheus grafana datadog
        newrelic tracing trace traces opentelemetry otel span spans alert alerts alerta alertas alerting
        on_call oncall pager pagerduty page_the_oncall monitoring monitoramento counter gauge histogram
        p95 p99 slo sli error_rate uptime
        apm monitor healthcheck health_check status_page sentry
    """,
    "email": """
        email emails e_mail e_mails mail mails transactional transacional newsletter template templates
        modelo modelos subject assunto unsubscribe descadastro descadastrar sendgrid mailgun ses smtp
        welcome_email boas_vindas inbox signature assinatura_do_email
        subject_line sender remetente reply_to bounce bounces spam mailchimp postmark
    """,
    "tax": """
        tax taxes taxation imposto impostos tributo tributos tributacao aliquota aliquotas icms iss ipi pis
        cofins vat gst sales_tax nota_fiscal notas_fiscais nfe nf_e nfse nfs_e nf fiscal rounding
        arredondamento arredondar centavo centavos invoice invoices fatura
        tax_rate withholding sefaz danfe cfop ncm simples_nacional
    """,
    "mobile": """
        mobile app_mobile aplicativo aplicativos react_native expo flutter android ios iphone ipad swift
        kotlin push_notification push_notifications notificacao_push notificacoes_push app_store
        play_store google_play testflight screens tela_do_app navigation navegacao deep_link
        camera
        apk ipa splash_screen gesture swipe tablet
    """,
}

# Words that say a request is work, not which work. Folded.
FILLER = frozenset(
    """
    add adds added adding make makes making fix fixes fixed fixing change changes changed update updates create
    creates write writes written need needs want wants use uses using please can could would should let lets
    try again still also now too new old same thing things do does done doing work works working sure way
    something anything everything every all one two three first last next other another each whole part
    help look see find found check why how handle handles keep per user users usuario usuarios cliente
    clientes customer customers app tela telas page pagina proper body field build what which who where when here there just really actually
    into onto from with without about after before over under up down out off on in at by for of to the a an
    adicione adiciona adicionar cria crie criar faz faca fazer faça mude muda mudar troque troca trocar
    corrija corrige corrigir arruma arrume ajuste ajusta ajustar coloca coloque colocar tira tire tirar
    quero queria preciso precisa precisamos pode podes poderia vamos vai gente agora tambem igual mesmo
    mesma outro outra outros outras novo nova novos novas todo toda todos todas coisa coisas aqui ali la
    veja ver olha olhe tenta tente tentar de_novo ainda ja so isso isto esse essa este esta aquele
    porque por_que como onde quando qual quais quem
""".split()
)

# Words of a prompt with no work in it. Folded.
SMALL_TALK = frozenset(
    """
    thanks thank thx ty cheers great good nice cool awesome perfect excellent lovely wonderful fine ok okay
    okey yes yep yeah yup sure alright right no nope nah hi hello hey morning evening afternoon night bye
    goodbye welcome job done looks look lgtm tell me go ahead proceed sounds please wow haha lol how are you today
    weather rain raining sunny tomorrow forecast joke jokes funny world cup won win who football soccer
    obrigado obrigada valeu vlw brigado beleza blz show bola otimo otima legal massa perfeito perfeita top
    sim claro isso certo certeza pode mandar manda bora vamos ok oi ola bom boa dia tarde noite tchau
    tudo bem como vai chover chuva tempo previsao amanha piada conta ganhou copa futebol era ficou ficar
    muito bacana demais maravilha combinado fechado entendi there here just really actually anyway
    much lot lots so many glad happy love loved amazing brilliant superb fantastic neat sweet yay np
    nope thumbs congrats congratulations cheers mate buddy pal dude folks guys everyone all bye later
    see soon tonight week weekend holiday holidays vacation lunch dinner coffee beer game
    played playing scored movie snow cold hot warm sun sunny cloudy temperature degrees
    gostei adorei amei curti valeu mano cara galera pessoal fechou fechado tranquilo suave firmeza
    demorou falou abraco abracos beijo beijos semana fim feriado ferias almoco jantar cafe cerveja
    jogo partida placar gol gols filme sol frio calor quente nublado temperatura graus
    aham uhum ahan hum hmm humm opa eita nossa uau ah oh eh hoje ontem
""".split()
)

# Laughter and similar: "kkkk", "hahaha", "rsrs", "lmao". Folded.
LAUGHTER = r"(?:k{3,}|(?:h?a){2,}h?|(?:h?e){2,}h?|(?:rs)+|lol+|lmao|rofl|xd)"

# Libraries and frameworks a request names when it updates one ("bump react", "atualiza o
# Django"): with an update verb or a version number, the request is about a dependency.
LIBRARIES = frozenset(
    """
    react vue angular svelte next nextjs nuxt django flask fastapi rails laravel symfony spring express
    nestjs lodash moment axios requests httpx numpy pandas scipy pytorch tensorflow celery sqlalchemy
    pydantic webpack vite babel typescript eslint prettier jest vitest pytest mocha jquery bootstrap
    tailwind redux graphql apollo prisma sequelize typeorm boto3 node nodejs python ruby java go rust
    kotlin swift flutter expo openssl log4j sdk
""".split()
)
UPDATE_VERBS = frozenset(
    """
    update updates updated updating upgrade upgrades upgraded upgrading bump bumps bumped downgrade
    replace migrate atualizar atualize atualiza atualizado atualizacao trocar troca troque substituir
    substitua substitui remove remover removes remova tira
""".split()
)

# Filler that asks for something: with one of these (or of CONTINUING), a request with no evidence
# of its own ("try again", "do it for billing", "mais algum lugar onde isso acontece?") is weighed by
# the earlier requests. Folded.
ASKING = frozenset(
    """
    add make fix change update create write need want use please can could would should let try again
    still also now too next done same then redo rerun retry undo revert continue finish remove
    delete rename move replace implement build run show explain refactor handle keep check look find
    this these those
    adicione adiciona adicionar cria crie criar faz faca mude muda mudar troque troca trocar
    corrija corrige corrigir arruma arrume ajuste ajusta ajustar coloca coloque colocar tira tire tirar
    quero queria preciso precisa precisamos podes poderia agora tambem igual mesmo mesma tenta tente
    tentar ainda isso isto disso nisso desse dessa deste desta roda rode rodar escreve escreva remove
    remova apaga apague implementa implemente mostra explica continua refaz refaca volta reverte
""".split()
)

# Words that make a request a follow-up even when it names work of its own ("and the same for
# the invoices endpoint", "faz igual no serviço de pagamentos"): its earlier requests count too.
CONTINUING = frozenset(
    """
    same too also again likewise similarly igual tambem mesmo mesma mesmos mesmas novamente idem
""".split()
)
