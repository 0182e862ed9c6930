"""The false-recall benchmark's own data: a small store of engineering facts, questions it
answers (with the fact that answers each), and everyday questions it has no answer for.

Written for this benchmark (ADR 0069); nothing here is copied from a data set.
"""

from __future__ import annotations

from typing import Final

#: A small store of a team's engineering facts (one memory entry each).
ENGINEERING_FACTS: Final[tuple[str, ...]] = (
    "The deploy script needs the corporate VPN to reach the staging cluster.",
    "Tabs are preferred over spaces in the Go services; Python code uses four spaces.",
    "The user prefers pnpm over npm for JavaScript projects.",
    "Replies should be short, in plain English, with code blocks for commands.",
    "The CI pipeline runs on GitHub Actions and takes about twelve minutes.",
    "Database migrations are written with Alembic and reviewed by the platform team.",
    "The production PostgreSQL cluster runs version 16 with two read replicas.",
    "Feature flags are managed in LaunchDarkly; stale flags are removed each quarter.",
    "The API gateway rate-limits clients to 600 requests per minute.",
    "Secrets live in HashiCorp Vault, never in environment files committed to git.",
    "Release branches are cut every second Tuesday and tagged with semantic versions.",
    "Integration tests need Docker running locally for the Redis container.",
    "The frontend is built with React and TypeScript, bundled by Vite.",
    "Logs are shipped to Grafana Loki and kept for thirty days.",
    "The on-call rotation changes every Monday at 09:00 UTC.",
    "Pull requests need two approvals and a green build before merging.",
    "The mobile app uses Kotlin on Android and Swift on iOS.",
    "Kubernetes manifests are templated with Helm charts in the infra repository.",
    "The search service indexes documents with OpenSearch 2.11.",
    "Error tracking goes to Sentry; alerts page the on-call engineer after five errors a minute.",
    "The billing service is written in Java 21 with Spring Boot.",
    "Use ruff for linting and formatting Python; mypy runs in strict mode.",
    "The staging database is refreshed from an anonymised production snapshot every night.",
    "Terraform state is stored in an S3 bucket with DynamoDB locking.",
    "The user's laptop runs macOS with Homebrew; the build servers run Ubuntu 22.04.",
    "Background jobs run on Celery workers with RabbitMQ as the broker.",
    "Image uploads are resized by a Lambda function before they reach the CDN.",
    "The team writes architecture decisions as ADRs in the docs folder.",
    "Load tests are run with k6 before every major release.",
    "The user wants commit messages in the imperative mood, under 72 characters.",
)

#: Questions the store answers: (question, the fact that answers it).
ANSWERABLE: Final[tuple[tuple[str, str], ...]] = (
    ("indentation style", ENGINEERING_FACTS[1]),
    ("which indentation style does the user like", ENGINEERING_FACTS[1]),
    ("javascript package manager", ENGINEERING_FACTS[2]),
    ("how should replies be formatted", ENGINEERING_FACTS[3]),
    ("what do I need before running the deploy script", ENGINEERING_FACTS[0]),
    ("where are secrets stored", ENGINEERING_FACTS[9]),
    ("how many approvals does a pull request need", ENGINEERING_FACTS[15]),
    ("which version of postgres runs in production", ENGINEERING_FACTS[6]),
    ("when does the on-call rotation change", ENGINEERING_FACTS[14]),
    ("what broker do the background workers use", ENGINEERING_FACTS[25]),
    ("how long are logs retained", ENGINEERING_FACTS[13]),
    ("what linter do we use for python", ENGINEERING_FACTS[21]),
)

#: Everyday questions the engineering store has no answer for.
EVERYDAY_QUESTIONS: Final[tuple[str, ...]] = (
    "recipe for banana bread with walnuts",
    "how to tune a violin string",
    "best hiking trails in Patagonia",
    "who won the 1998 football world cup",
    "does the user like pizza",
    "Can you summarize the plot of the novel for me please?",
    "where do the cats nap",
    "how long should I boil an egg",
    "what is the capital of Australia",
    "how do I get red wine out of a carpet",
    "good names for a golden retriever puppy",
    "what time is sunset in Lisbon today",
    "how many calories are in an avocado",
    "tips for growing tomatoes on a balcony",
    "how to fold a fitted sheet",
    "which planets can you see without a telescope",
    "what should I pack for a beach holiday",
    "how do you say thank you in Japanese",
    "why is the sky blue",
    "who painted the Mona Lisa",
    "how to make cold brew coffee at home",
    "what are the rules of cricket",
    "recommend a good mystery novel",
    "how often should I water a cactus",
    "what is the tallest mountain in Africa",
    "how to remove rust from a bicycle chain",
    "what's a good stretching routine after running",
    "how do I knit a scarf",
    "when is the best time to visit Kyoto",
    "what wine goes with grilled salmon",
    "how to teach a dog to sit",
    "hello, how are you today?",
    "thanks, that's all for now",
    "tell me a joke about penguins",
    "what's the weather like tomorrow",
    "how do I make sourdough starter",
    "who wrote Pride and Prejudice",
    "ideas for a child's birthday party",
    "怎么做红烧肉",
    "¿cuál es la mejor playa de España?",
)

#: The paraphrase store of tests/integration/test_paraphrase_local.py (its notes' texts, in its
#: order): the questions the issue named, each with the note it should find (ADR 0072) ...
PARAPHRASE_NOTES: tuple[str, ...] = (
    "Tabs are preferred over spaces",
    "Use pnpm, not npm, in the web repository",
    "Keep replies short: plain bullet points, no headings",
    "The staging deploy needs the VPN and a fresh token",
    "Backups of the production database run nightly at 02:00",
    "We chose PostgreSQL 16 for the team server",
    "The user's name is Dana and they work in Lisbon",
    "Run the test suite with make test before pushing",
)
PARAPHRASE_RELATED: tuple[tuple[str, int], ...] = (
    ("indentation style", 0),
    ("which indentation style does the user like", 0),
    ("javascript package manager", 1),
    ("how should replies be formatted", 2),
    ("what does the deploy need", 3),
    ("when do backups run", 4),
    ("which database did we choose", 5),
)
#: ... and the questions it should answer with nothing.
PARAPHRASE_UNRELATED: tuple[str, ...] = (
    "where do the cats nap",
    "recipe for banana bread with walnuts",
    "how to tune a violin string",
    "best hiking trails in Patagonia",
    "who won the 1998 football world cup",
    "Can you summarize the plot of the novel for me please?",
    "what is the capital of Australia",
    "does the user like pizza",
)

__all__ = [
    "ANSWERABLE",
    "ENGINEERING_FACTS",
    "EVERYDAY_QUESTIONS",
    "PARAPHRASE_NOTES",
    "PARAPHRASE_RELATED",
    "PARAPHRASE_UNRELATED",
]
